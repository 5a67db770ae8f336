package fleet

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// onBundleRequest answers a worker that lacks a job's start commit with
// a bundle of it, less what the worker says it has.
func (d *Dispatcher) onBundleRequest(m *nats.Msg) {
	var req BundleRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return
	}
	go func() { // a first bundle of a large repository takes a while
		reply := func(r BundleReply) {
			b, _ := json.Marshal(r)
			_ = m.Respond(b)
		}
		d.mu.Lock()
		p := d.jobs[req.Job]
		d.mu.Unlock()
		if p == nil || req.Want != p.job.Start {
			reply(BundleReply{Error: "no such job in flight"})
			return
		}
		// The code goes only to a worker that received the job (its
		// nonce), in that worker's own inbox (no other may read it).
		if !NamePattern().MatchString(req.Worker) || !strings.HasPrefix(m.Reply, InboxPrefix(req.Worker)+".") ||
			p.job.Nonce != "" && subtle.ConstantTimeCompare([]byte(req.Nonce), []byte(p.job.Nonce)) != 1 {
			reply(BundleReply{Error: "no such job in flight"})
			return
		}
		have := append([]string(nil), req.Have...)
		sort.Strings(have)
		h := sha256.Sum256([]byte(strings.Join(have, ",")))
		name := fmt.Sprintf("%s/b/%s-%s", d.run, req.Want, hex.EncodeToString(h[:8]))
		ctx, cancel := context.WithTimeout(d.base, 5*time.Minute)
		defer cancel()
		d.bundleMu.Lock()
		defer d.bundleMu.Unlock()
		d.mu.Lock()
		stored := d.stored[name]
		d.mu.Unlock()
		if stored {
			reply(BundleReply{Object: name})
			return
		}
		path := filepath.Join(d.scratch, "b-"+randomID()+".bundle")
		defer os.Remove(path)
		if err := d.local.WriteBundle(ctx, p.dir, req.Want, have, path); err != nil {
			reply(BundleReply{Error: "bundle: " + err.Error()})
			return
		}
		if b, err := os.ReadFile(path); err == nil && len(b) <= inlineMax {
			reply(BundleReply{Data: b})
			return
		}
		if err := putFile(ctx, d.conn.Bundles, name, path); err != nil {
			reply(BundleReply{Error: "store bundle: " + err.Error()})
			return
		}
		d.mu.Lock()
		d.stored[name] = true
		d.mu.Unlock()
		reply(BundleReply{Object: name})
	}()
}

// accept takes the accepted lease's result: the commit it returns must be
// a child of the job's start, and is applied to the worktree.
func (d *Dispatcher) accept(ctx context.Context, req *muster.ExecRequest, p *pending, rep *Report) (*muster.ExecResult, error) {
	if rep.Fail != "" {
		return nil, &muster.AgentError{Class: muster.FailTransient, Message: "fleet worker " + rep.Worker + ": " + rep.Fail}
	}
	res := rep.Exec
	if res == nil {
		res = &muster.ExecResult{}
	}
	res.Gates = nil
	if req.Role == muster.RoleCoder && rep.Error == nil {
		if rep.Commit != "" {
			if err := d.take(ctx, req.Dir, p, rep); err != nil {
				return nil, &muster.AgentError{Class: muster.FailInvalid, Message: "fleet worker " + rep.Worker + ": result refused: " + err.Error()}
			}
		}
		if rep.Gates != nil && d.trustGates {
			res.Gates = rep.Gates // trusted: else the driver runs them on the change here
		}
	}
	if req.PlanOut != "" && rep.Plan != "" {
		if len(rep.Plan) > maxPlan {
			return nil, &muster.AgentError{Class: muster.FailInvalid, Message: "fleet worker " + rep.Worker + ": plan file over 1 MiB"}
		}
		// Into the local invocation's out/, by rename: never through a link.
		if err := exchange.WriteFile(filepath.Dir(req.PlanOut), filepath.Base(req.PlanOut), []byte(rep.Plan), 0o644); err != nil {
			return nil, err
		}
	}
	if rep.Error != nil {
		return res, rep.Error
	}
	return res, nil
}

// take stores the result's bundle (inside the report, or its chunks),
// checks that it holds one commit on the job's start, and writes its
// change into dir.
func (d *Dispatcher) take(ctx context.Context, dir string, p *pending, rep *Report) error {
	start := p.job.Start
	var path string
	switch {
	case rep.Chunks > 0:
		var err error
		if path, err = p.chunked(rep); err != nil {
			return err
		}
		defer p.dropChunks()
	case len(rep.BundleData) > 0:
		path = filepath.Join(d.scratch, "r-"+randomID()+".bundle")
		defer os.Remove(path)
		if err := os.WriteFile(path, rep.BundleData, 0o600); err != nil {
			return err
		}
	default:
		return errors.New("a changed result without its bundle (a worker of an earlier version? results travel on the worker's own subject now)")
	}
	tip, parents, err := d.local.ReadBundle(ctx, dir, path)
	if err != nil {
		return err
	}
	if tip != rep.Commit {
		return fmt.Errorf("the bundle holds %s, not the reported %s", tip, rep.Commit)
	}
	if len(parents) != 1 || parents[0] != start {
		return fmt.Errorf("commit %s is not one commit on the job's start %s", tip, start)
	}
	return d.local.Apply(ctx, dir, start, tip)
}
