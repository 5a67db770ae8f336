// Package confine confines a process with the kernel before it runs a
// program in its place: the program may read and execute every file but
// write only the paths it is given (on Linux, with Landlock), besides
// Devices. muster runs
// every agent process and every gate through it, as the hidden
// subcommand muster.ConfineCommand of its own executable:
//
//	muster __confine [--write PATH]... -- PROGRAM [ARG]...
//
// The program replaces the confining process (execve), so it keeps its
// pid and process group, and muster still stops it as before.
package confine

import (
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strings"
)

// NoLandlockEnv, when set to "1" in muster's environment, makes Probe
// report that the kernel cannot confine. It is for tests only: it
// simulates a system without Landlock.
const NoLandlockEnv = "MUSTER_TEST_NO_LANDLOCK"

// Shared lists the shared temporary directories muster lets confined
// processes write unless the user's repository lies in one (the caller
// decides: they are --write paths like any other).
var Shared = []string{"/tmp", "/dev/shm"}

// Devices are the device files (and /dev/pts, the terminals) a confined
// process may always open for writing, each when it exists.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/random", "/dev/urandom", "/dev/pts"}

// Status is what the kernel offers.
type Status struct {
	// ABI is the Landlock ABI version muster uses (0: none).
	ABI int
	// Reason says why the kernel cannot confine ("" when it can).
	Reason string
}

// Available reports whether processes can be confined.
func (s Status) Available() bool { return s.Reason == "" }

// String describes the status for people, such as "Landlock ABI 7".
func (s Status) String() string {
	if !s.Available() {
		return "unavailable: " + s.Reason
	}
	return fmt.Sprintf("Landlock ABI %d", s.ABI)
}

// Probe tells whether the kernel can confine processes here.
func Probe() Status {
	if os.Getenv(NoLandlockEnv) == "1" {
		return Status{Reason: "no Landlock (simulated by " + NoLandlockEnv + "=1)"}
	}
	return probe()
}

// Main is the ConfineCommand: it parses args ([--write PATH]... --
// PROGRAM [ARG]...), confines the process and replaces it with PROGRAM
// (looked up on PATH when it has no slash). It returns only on failure,
// with the exit status to use (125: cannot confine, 126: cannot run
// the program, 127: program not found), having said why on stderr.
func Main(args []string, stderr io.Writer) int {
	writable, argv, err := Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
		return 125
	}
	path, err := osexec.LookPath(argv[0])
	if err != nil && !errors.Is(err, osexec.ErrDot) {
		fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
		return 127
	}
	if st := Probe(); !st.Available() {
		fmt.Fprintf(stderr, "muster %s: cannot confine: %s\n", commandName, st.Reason)
		return 125
	}
	// exec returns only on failure; on success the program runs confined
	// in this process's place.
	code, err := exec(path, argv, writable)
	fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
	return code
}

const commandName = "__confine"

// Parse splits the arguments of the ConfineCommand into the writable
// paths and the program's command line.
func Parse(args []string) (writable, argv []string, err error) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 >= len(args) {
				return nil, nil, errors.New("no program after --")
			}
			return writable, args[i+1:], nil
		case a == "--write":
			if i+1 >= len(args) {
				return nil, nil, errors.New("--write needs a path")
			}
			i++
			writable = append(writable, args[i])
		case strings.HasPrefix(a, "--write="):
			writable = append(writable, strings.TrimPrefix(a, "--write="))
		default:
			return nil, nil, fmt.Errorf("unknown argument %q (want [--write PATH]... -- PROGRAM [ARG]...)", a)
		}
	}
	return nil, nil, errors.New("no program (want [--write PATH]... -- PROGRAM [ARG]...)")
}
