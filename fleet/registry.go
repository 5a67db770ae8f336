package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster"
)

// HeartbeatEvery is how often a worker refreshes its registration.
const HeartbeatEvery = 2 * time.Second

// Registration is what a worker publishes about itself.
type Registration struct {
	Name      string          `json:"name"`
	Version   string          `json:"version"`
	Started   time.Time       `json:"started"`
	Executors []ExecutorState `json:"executors"`
	// Stopping is set while a worker finishes or hands back its work.
	Stopping bool `json:"stopping,omitempty"`
	// LeaseS is the worker's lease in seconds.
	LeaseS float64 `json:"lease_s,omitempty"`
	// JWT is the worker's user JWT (public; Register fills it in): the
	// orchestrator takes only the executors it names (vouch).
	JWT string `json:"jwt,omitempty"`
}

// ExecutorState is one executor a worker serves.
type ExecutorState struct {
	Name   string          `json:"name"`
	Kind   muster.ExecKind `json:"kind"`
	Roles  []muster.Role   `json:"roles,omitempty"`
	Clones int             `json:"clones"`
	Busy   int             `json:"busy"`
	// Doing lists the busy clones' work.
	Doing []Doing `json:"doing,omitempty"`
}

// Doing is the work of one busy clone.
type Doing struct {
	Clone   int           `json:"clone"`
	Run     string        `json:"run"`
	Task    muster.TaskID `json:"task"`
	Attempt int           `json:"attempt"`
	Round   int           `json:"round"`
	Role    muster.Role   `json:"role"`
}

// WorkerInfo is a registration as read back, with its age.
type WorkerInfo struct {
	Registration
	// Heartbeat is when the server stored the last refresh.
	Heartbeat time.Time
}

// Register stores (or refreshes) a worker's registration, with the user
// JWT of the connection's credentials when it carries none.
func (c *Conn) Register(ctx context.Context, r *Registration) error {
	if r.JWT == "" && c.self != nil {
		r.JWT = c.self.JWT
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = c.Workers.Put(ctx, r.Name, data)
	return err
}

// Unregister removes a worker's registration (on a clean stop).
func (c *Conn) Unregister(ctx context.Context, name string) error {
	return c.Workers.Purge(ctx, name)
}

// Workers lists the registered workers, by name. A registration that
// does not decode is skipped (another program may share the bucket).
func (c *Conn) ListWorkers(ctx context.Context) ([]WorkerInfo, error) {
	keys, err := c.Workers.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []WorkerInfo
	for k := range keys.Keys() {
		e, err := c.Workers.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", k, err)
		}
		var r Registration
		if json.Unmarshal(e.Value(), &r) != nil || r.Name == "" {
			continue
		}
		c.vouch(k, &r)
		out = append(out, WorkerInfo{Registration: r, Heartbeat: e.Created()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Lease is the longest lease of the workers (DefaultLease when none
// says): how long the orchestrator waits before it suspects a job lost.
func Lease(workers []WorkerInfo) time.Duration {
	var l time.Duration
	for _, w := range workers {
		l = max(l, time.Duration(w.LeaseS*float64(time.Second)))
	}
	if l <= 0 {
		return DefaultLease
	}
	return l
}

// Crew is the executors the fleet serves, pooled by name: an executor
// served by several workers has the sum of their clones.
func Crew(workers []WorkerInfo) []*muster.ExecutorSpec {
	by := map[string]*muster.ExecutorSpec{}
	var order []string
	for _, w := range workers {
		if w.Stopping {
			continue
		}
		for _, e := range w.Executors {
			if !executorName().MatchString(e.Name) {
				continue // no config could name it: a worker's word only
			}
			s := by[e.Name]
			if s == nil {
				s = &muster.ExecutorSpec{Name: e.Name, Kind: e.Kind, Roles: e.Roles}
				by[e.Name] = s
				order = append(order, e.Name)
			}
			s.Clones = boundClones(s.Clones + boundClones(e.Clones))
		}
	}
	sort.Strings(order)
	out := make([]*muster.ExecutorSpec, 0, len(order))
	for _, n := range order {
		out = append(out, by[n])
	}
	return out
}

// WatchWorkers calls fn with every registration the workers bucket holds
// now and each one a worker stores from then on (its heartbeats
// included), on the calling goroutine, until ctx ends; it returns why
// the watch stopped early otherwise. A registration that does not
// decode, or of a worker that is stopping, is skipped.
func (c *Conn) WatchWorkers(ctx context.Context, fn func(Registration)) error {
	w, err := c.Workers.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("fleet: watch the workers: %w", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("fleet: the watch of the workers ended")
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // the end of what the bucket held, or a worker gone
			}
			var r Registration
			if json.Unmarshal(e.Value(), &r) != nil || r.Name == "" || r.Stopping {
				continue
			}
			c.vouch(e.Key(), &r)
			fn(r)
		}
	}
}

// vouch keeps of r, the registration stored under key, the executors its
// user JWT names, and names it key: the server lets a worker write only
// the key of its credential's name, but the rest is the worker's word.
// Without a JWT signed by this fleet's account for key, r serves nothing.
// A connection that holds no credentials (fleet serve's own) has no
// account to check against and takes r as it is.
func (c *Conn) vouch(key string, r *Registration) {
	if c.self == nil || c.self.Issuer == "" {
		return
	}
	r.Name = key
	allowed, _ := vouchedExecutors(r.JWT, key, c.self.Issuer)
	kept := r.Executors[:0]
	for _, e := range r.Executors {
		if allowed[e.Name] {
			kept = append(kept, e)
		}
	}
	r.Executors = kept
	r.JWT = "" // checked: it goes no further (fleet status, the journal)
}

// executorName is what an executor's name may be (a config's table
// name, bounded): a registration is a worker's word.
var executorName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// NewExecutors are the executors of a registration whose names known
// does not hold (and that are names a config could give), as the crew
// takes them (Fleet set). It adds their names to known.
func NewExecutors(r Registration, known map[string]bool) []*muster.ExecutorSpec {
	var out []*muster.ExecutorSpec
	for _, e := range r.Executors {
		if known[e.Name] || !executorName().MatchString(e.Name) {
			continue
		}
		known[e.Name] = true
		out = append(out, &muster.ExecutorSpec{Name: e.Name, Kind: e.Kind, Roles: e.Roles, Clones: boundClones(e.Clones), Fleet: true})
	}
	return out
}

// boundClones is a registration's clones as a config could give them,
// 1 to muster.MaxClones: the orchestrator's scheduler counts through an
// executor's clones at each decision, and status makes a lane for each.
func boundClones(n int) int {
	return min(max(n, 1), muster.MaxClones)
}
