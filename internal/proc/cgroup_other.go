//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// Cgroups says where muster can bound an invocation's processes and
// memory: nowhere on this system.
type Cgroups struct {
	Version      int
	Pids, Memory string
	Reason       string
}

// Can reports that no limit can be enforced here.
func (c Cgroups) Can(pids int, memory int64) (bool, string) {
	if pids == 0 && memory == 0 {
		return true, ""
	}
	return false, "no cgroup can enforce max_pids or max_memory: " + c.Reason
}

// NoCgroupEnv is the test switch of the Linux build (unused here).
const NoCgroupEnv = "MUSTER_TEST_NO_CGROUP"

// ProbeCgroups finds no cgroup on this system.
func ProbeCgroups() Cgroups { return Cgroups{Reason: "cgroups are Linux's"} }

type cgroup struct{}

func newCgroup(string, int, int64) (*cgroup, error) {
	return nil, errors.New("no cgroup can enforce max_pids or max_memory on this system")
}
func (g *cgroup) fd() int { return -1 }

// startIn: no process starts in a cgroup here.
func (g *cgroup) startIn(*syscall.SysProcAttr) bool { return false }
func (g *cgroup) join(int) error                    { return nil }
func (g *cgroup) hit() string                       { return "" }
func (g *cgroup) kill()                             {}
func (g *cgroup) remove()                           {}
