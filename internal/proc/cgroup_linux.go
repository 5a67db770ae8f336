package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cgroups says where muster can bound an invocation's processes and
// memory ([run] max_pids, max_memory; ARCHITECTURE §8.1): the parent
// directory under which it creates a group per invocation, per
// controller. Probed once per process (ProbeCgroups).
type Cgroups struct {
	// Version is 2 (one unified group per invocation, the child started
	// in it with SysProcAttr.UseCgroupFD), 1 (a group in each of the
	// pids and memory hierarchies, stage one placed in them before its
	// program starts) or 0 (none).
	Version int
	// Pids and Memory are the parent directories for the pids and the
	// memory controller ("": that controller cannot be used here; with
	// Version 2 both name the same directory).
	Pids, Memory string
	// Reason says why a controller is missing ("" when both are there).
	Reason string
}

// Can reports whether the limits asked for (pids, memory: not 0) can be
// enforced here, and if not, why.
func (c Cgroups) Can(pids int, memory int64) (bool, string) {
	var missing []string
	if pids > 0 && c.Pids == "" {
		missing = append(missing, "max_pids (the pids controller)")
	}
	if memory > 0 && c.Memory == "" {
		missing = append(missing, "max_memory (the memory controller)")
	}
	if len(missing) == 0 {
		return true, ""
	}
	why := c.Reason
	if why == "" {
		why = "no writable cgroup"
	}
	return false, fmt.Sprintf("no cgroup can enforce %s: %s", strings.Join(missing, " and "), why)
}

var (
	cgroupsOnce sync.Once
	cgroups     Cgroups
)

// NoCgroupEnv, when "1", makes ProbeCgroups find no usable cgroup. It
// is for tests only: it simulates a system without one.
const NoCgroupEnv = "MUSTER_TEST_NO_CGROUP"

// ProbeCgroups finds, once per process, where this process can create
// groups with the pids and memory controllers: a writable cgroup2
// subtree that has them enabled for its children (preferred), else the
// cgroup v1 pids and memory hierarchies, below this process's own group.
func ProbeCgroups() Cgroups {
	cgroupsOnce.Do(func() {
		if os.Getenv(NoCgroupEnv) == "1" {
			cgroups = Cgroups{Reason: "no cgroup (simulated by " + NoCgroupEnv + "=1)"}
			return
		}
		cgroups = probeCgroups()
	})
	return cgroups
}

func probeCgroups() Cgroups {
	mounts, own, err := cgroupMounts()
	if err != nil {
		return Cgroups{Reason: err.Error()}
	}
	var why []string
	if dir, ok := mounts["2"]; ok {
		p := filepath.Join(dir, own["2"])
		reason := probeV2(p)
		if reason == "" {
			return Cgroups{Version: 2, Pids: p, Memory: p}
		}
		why = append(why, "cgroup2 at "+p+": "+reason)
	}
	c := Cgroups{Version: 1}
	for _, ctl := range []string{"pids", "memory"} {
		dir, ok := mounts[ctl]
		if !ok {
			why = append(why, "no cgroup v1 "+ctl+" hierarchy")
			continue
		}
		p := filepath.Join(dir, own[ctl])
		if err := probeDir(p); err != nil {
			why = append(why, fmt.Sprintf("cgroup v1 %s: %v", ctl, err))
			continue
		}
		if ctl == "pids" {
			c.Pids = p
		} else {
			c.Memory = p
		}
	}
	if c.Pids == "" && c.Memory == "" {
		c.Version = 0
	}
	c.Reason = strings.Join(why, "; ")
	if c.Pids != "" && c.Memory != "" {
		c.Reason = ""
	}
	return c
}

// cgroupMounts returns the mount point of each cgroup v1 controller
// (and of cgroup2, under "2") and this process's group in each, from
// /proc/self/mountinfo and /proc/self/cgroup.
func cgroupMounts() (mounts, own map[string]string, err error) {
	mounts, own = map[string]string{}, map[string]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue // a bind of a group's subtree is not a hierarchy's root
		}
		switch tail[0] {
		case "cgroup2":
			mounts["2"] = fields[4]
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				if o == "pids" || o == "memory" {
					mounts[o] = fields[4]
				}
			}
		}
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own["2"] = parts[2]
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			own[ctl] = parts[2]
		}
	}
	return mounts, own, nil
}

// probeV2 says why the cgroup2 directory p cannot hold groups with the
// pids and memory controllers ("" when it can).
func probeV2(p string) string {
	b, err := os.ReadFile(filepath.Join(p, "cgroup.subtree_control"))
	if err != nil {
		return err.Error()
	}
	have := strings.Fields(string(b))
	for _, ctl := range []string{"pids", "memory"} {
		if !contains(have, ctl) {
			return "the " + ctl + " controller is not enabled for its children (cgroup.subtree_control)"
		}
	}
	if err := probeDir(p); err != nil {
		return err.Error()
	}
	return ""
}

// probeDir creates and removes a group under p.
func probeDir(p string) error {
	d := filepath.Join(p, fmt.Sprintf("muster-probe-%d", os.Getpid()))
	if err := os.Mkdir(d, 0o755); err != nil {
		return fmt.Errorf("cannot create a group: %w", err)
	}
	if err := os.Remove(d); err != nil {
		return fmt.Errorf("cannot remove a group: %w", err)
	}
	return nil
}

// cgroup is the group (v2) or groups (v1) of one invocation.
type cgroup struct {
	version   int
	pids, mem string   // the invocation's group per controller ("": none)
	dir       *os.File // v2: the group, for UseCgroupFD
	maxPids   int
	maxMemory int64
}

// newCgroup creates the groups of one invocation named name, with the
// limits set (0: that limit unset).
func newCgroup(name string, maxPids int, maxMemory int64) (*cgroup, error) {
	c := ProbeCgroups()
	if ok, why := c.Can(maxPids, maxMemory); !ok {
		return nil, errors.New(why)
	}
	g := &cgroup{version: c.Version, maxPids: maxPids, maxMemory: maxMemory}
	made := func(parent string) (string, error) {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("cgroup: %w", err)
		}
		return d, nil
	}
	var err error
	if maxPids > 0 {
		if g.pids, err = made(c.Pids); err != nil {
			return nil, err
		}
		if err = writeFile(g.pids, "pids.max", strconv.Itoa(maxPids)); err != nil {
			g.remove()
			return nil, err
		}
	}
	if maxMemory > 0 {
		if g.mem, err = made(c.Memory); err != nil {
			g.remove()
			return nil, err
		}
		if err = g.limitMemory(); err != nil {
			g.remove()
			return nil, err
		}
	}
	if g.version == 2 {
		d := g.pids
		if d == "" {
			d = g.mem
		}
		if g.dir, err = os.Open(d); err != nil {
			g.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
	}
	return g, nil
}

func (g *cgroup) limitMemory() error {
	n := strconv.FormatInt(g.maxMemory, 10)
	if g.version == 2 {
		if err := writeFile(g.mem, "memory.max", n); err != nil {
			return err
		}
		// No swap: a hog is killed at the limit rather than swapped.
		_ = writeFile(g.mem, "memory.swap.max", "0")
		return nil
	}
	if err := writeFile(g.mem, "memory.limit_in_bytes", n); err != nil {
		return err
	}
	_ = writeFile(g.mem, "memory.memsw.limit_in_bytes", n)
	return nil
}

func writeFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0); err != nil {
		return fmt.Errorf("cgroup: set %s: %w", name, err)
	}
	return nil
}

// fd is the group's directory for SysProcAttr.UseCgroupFD (v2), or -1.
// startIn makes the process start inside the group (cgroup v2: the
// clone lands there, SysProcAttr.UseCgroupFD); false where the group is
// v1's, which the caller places by the hold instead.
func (g *cgroup) startIn(attr *syscall.SysProcAttr) bool {
	fd := g.fd()
	if fd < 0 {
		return false
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = fd
	return true
}

func (g *cgroup) fd() int {
	if g.dir == nil {
		return -1
	}
	return int(g.dir.Fd())
}

// join places pid in the v1 groups (v2: the child was started in its
// group).
func (g *cgroup) join(pid int) error {
	if g.version == 2 {
		return nil
	}
	for _, d := range []string{g.pids, g.mem} {
		if d == "" {
			continue
		}
		if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// hit names the limit the invocation reached ("max_memory": the kernel
// killed one of its processes at it; "max_pids": a fork was refused at
// it), or "".
func (g *cgroup) hit() string {
	if g.mem != "" {
		file, key := "memory.oom_control", "oom_kill"
		if g.version == 2 {
			file = "memory.events"
		}
		if counter(filepath.Join(g.mem, file), key) > 0 {
			return "max_memory"
		}
	}
	if g.pids != "" && counter(filepath.Join(g.pids, "pids.events"), "max") > 0 {
		return "max_pids"
	}
	return ""
}

// counter reads "key N" from a flat-keyed cgroup file (0: none).
func counter(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// kill ends every process left in the groups (v2: cgroup.kill where the
// kernel has it); muster's own family stop has run first.
func (g *cgroup) kill() {
	for _, d := range []string{g.pids, g.mem} {
		if d == "" {
			continue
		}
		if g.version == 2 && writeFile(d, "cgroup.kill", "1") == nil {
			continue
		}
		for range 50 {
			pids := members(d)
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

func members(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// remove removes the groups once they are empty (a killed process leaves
// its group a moment after it is reaped).
func (g *cgroup) remove() {
	if g.dir != nil {
		g.dir.Close()
		g.dir = nil
	}
	for _, d := range []string{g.pids, g.mem} {
		if d == "" {
			continue
		}
		for i := 0; i < 200; i++ {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
