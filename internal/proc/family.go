package proc

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// MarkEnv is the variable muster puts into the environment of every
// process it starts: "MUSTERPID.STARTTIME.N", muster's pid and start
// time (which together name this muster process) and a number for the
// invocation. Every descendant inherits it, so the processes of an
// invocation are found even after they left its process group and
// session, and a later muster can tell the leftovers of one that died.
const MarkEnv = "MUSTER_PROC"

// ownMark names this muster process in marks; read on first use, not
// at start (a confined start of an agent reads no /proc).
var ownMark = sync.OnceValue(func() string { return fmt.Sprintf("%d.%d", os.Getpid(), startOf(os.Getpid())) })

var markSeq atomic.Int64

// Owner names this muster process as marks do: "PID.STARTTIME".
func Owner() string { return ownMark() }

// newMark returns a mark for a new invocation.
func newMark() string { return fmt.Sprintf("%s.%d", ownMark(), markSeq.Add(1)) }

// markOwner returns the muster part ("PID.START") of a mark.
func markOwner(m string) (string, bool) {
	i := strings.LastIndexByte(m, '.')
	if i <= 0 || strings.Count(m, ".") != 2 {
		return "", false
	}
	return m[:i], true
}

// info is one process as /proc/PID/stat tells it.
type info struct {
	pid, ppid, pgid, sid int
	start                uint64 // clock ticks after boot: with pid, the process's identity
	zombie               bool
}

// family is the processes of one invocation: its leader (which leads
// its own session and process group) and everything descended from it
// or marked with its mark.
type family struct {
	leader int
	start  uint64 // the leader's start time
	mark   string

	mu   sync.Mutex
	seen map[int]info // members signalled so far, for reap
}

// withEnv returns env (nil: this process's) with name set to value.
func withEnv(env []string, name, value string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
