// Package confine confines a process with the kernel before it runs a
// program under it: the program may read and execute every file it can
// see but write only the paths it is given (on Linux, with Landlock),
// besides Devices, holds no capability and gains none (no_new_privs).
// muster runs every agent process and every gate through it, as the
// hidden subcommand muster.ConfineCommand of its own executable or of
// the small launcher installed beside it (LauncherName):
//
//	muster __confine [--write PATH]... [--ns ...] -- PROGRAM [ARG]...
//
// Without --ns the confining process stays as the program's parent, in
// its process group, and the subreaper of everything the program starts,
// which ends with it. With --ns (internal/proc started the
// process in new namespaces) this process is stage one of the sandbox,
// PID 1 of its namespace (see muster.ConfineCommand and ARCHITECTURE
// §8.1), and the program runs as its child.
package confine

import (
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// NoLandlockEnv, when set to "1" in muster's environment, makes Probe
// report that the kernel cannot confine. It is for tests only: it
// simulates a system without Landlock.
const NoLandlockEnv = "MUSTER_TEST_NO_LANDLOCK"

// NoUserNSEnv, when set to "1" in muster's environment, makes
// ProbeNamespaces report that user namespaces are unavailable (as under
// Ubuntu 24.04's AppArmor default). It is for tests only: muster then
// confines with Landlock and the capability drop alone.
const NoUserNSEnv = "MUSTER_TEST_NO_USERNS"

// Shared lists the shared temporary directories muster lets confined
// processes write, without namespaces, unless the user's repository lies
// in one (the caller decides: they are --write paths like any other).
// With namespaces each invocation has its own, private.
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

// Options are the parsed arguments of the ConfineCommand.
type Options struct {
	Write    []string // --write
	ReadOnly []string // --ro
	Hide     []string // --hide
	// Grace (--grace, 0: DefaultGrace): how long what the program left
	// gets between SIGTERM and SIGKILL (without namespaces, half of it;
	// see runAlone).
	Grace time.Duration
	// Namespaces: stage one of the sandbox (--ns), with:
	Namespaces bool
	HostNet    bool // --host-net: no network namespace
	BridgePort int  // --bridge (0: no bridge)
	// Probe (--probe, with --ns): build the namespace, then exit 0
	// without running a program.
	Probe bool
	// Hold (--hold FD): wait for muster's go-ahead, one byte on FD,
	// before anything else (muster places this process in the
	// invocation's cgroup meanwhile: [run] max_pids, max_memory).
	Hold int
	// Life (--life FD): the read end of a pipe only muster writes to and
	// holds open; its end means muster is gone, and everything of the
	// invocation then ends at once.
	Life int
	Argv []string // the program and its arguments
}

// DefaultGrace is how long stage one lets what the program left behind
// end after SIGTERM before the namespace ends.
const DefaultGrace = 2 * time.Second

// Main is the ConfineCommand: it parses args, confines the process and
// runs PROGRAM (looked up on PATH when it has no slash) under it, and
// returns the program's exit status (128+N when a signal N ended it):
// with --ns as stage one of the sandbox, without as the program's
// parent and the subreaper of all it starts (runAlone). Its own failures return
// 125 (cannot confine), 126 (cannot run the program) or 127 (program not
// found), having said why on stderr. With the single argument --version
// it prints the launcher's Identity on stdout and returns 0.
func Main(args []string, stderr io.Writer) int {
	if len(args) == 1 && args[0] == versionFlag {
		// Which muster may hand this launcher its sandboxes (Launcher).
		fmt.Fprintln(os.Stdout, Identity())
		return 0
	}
	o, err := ParseOptions(args)
	if err != nil {
		fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
		return 125
	}
	if err := awaitHold(o.Hold); err != nil {
		fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
		return 125
	}
	if o.Probe {
		if !o.Namespaces {
			fmt.Fprintf(stderr, "muster %s: --probe needs --ns\n", commandName)
			return 125
		}
		if err := stageOne(o, ""); err != nil {
			fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
			return 125
		}
		return 0
	}
	path, err := osexec.LookPath(o.Argv[0])
	if err != nil && !errors.Is(err, osexec.ErrDot) {
		fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
		return 127
	}
	if st := Probe(); !st.Available() {
		fmt.Fprintf(stderr, "muster %s: cannot confine: %s\n", commandName, st.Reason)
		return 125
	}
	if o.Namespaces {
		code, err := runStageOne(o, path)
		if err != nil {
			fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
		}
		return code
	}
	code, err := runAlone(o, path)
	if err != nil {
		fmt.Fprintf(stderr, "muster %s: %v\n", commandName, err)
	}
	return code
}

const commandName = "__confine"

// landlockReadable is what a confinement without namespaces may read
// (nil: everything): without a mount namespace to cover o.Hide, Landlock
// grants reading everywhere but there (ReadRoots), and still below what
// o.ReadOnly lists, the program's directory, the working directory and
// the PATH directories.
func landlockReadable(o Options, prog string) []string {
	if len(o.Hide) == 0 {
		return nil
	}
	keep := append([]string(nil), o.ReadOnly...)
	keep = append(keep, filepath.Dir(prog))
	if cwd, err := os.Getwd(); err == nil {
		keep = append(keep, cwd)
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			keep = append(keep, d)
		}
	}
	return ReadRoots(o.Hide, keep)
}

// awaitHold waits for muster's go-ahead on fd (0: none): one byte 'G',
// written once muster has placed this process in its cgroup.
func awaitHold(fd int) error {
	if fd <= 0 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "hold")
	if f == nil {
		return fmt.Errorf("--hold %d: not an open file", fd)
	}
	defer f.Close()
	b := make([]byte, 1)
	if n, _ := f.Read(b); n != 1 || b[0] != 'G' {
		return errors.New("muster did not place the invocation in its cgroup (max_pids, max_memory): not started")
	}
	return nil
}

// Parse splits the arguments of the ConfineCommand into the writable
// paths and the program's command line.
func Parse(args []string) (writable, argv []string, err error) {
	o, err := ParseOptions(args)
	if err != nil {
		return nil, nil, err
	}
	return o.Write, o.Argv, nil
}

// usage lists the ConfineCommand's options (TestProtocolPinsTheOptions
// ties it to Protocol: a change to them bumps it).
const usage = "want [--protocol N] [--hold FD] [--write PATH]... [--ro PATH]... [--hide PATH]... [--grace D] [--life FD] [--ns [--host-net] [--bridge PORT]] -- PROGRAM [ARG]..."

// ParseOptions parses the arguments of the ConfineCommand.
func ParseOptions(args []string) (Options, error) {
	var o Options
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		takes := name == "--write" || name == "--ro" || name == "--hide" || name == "--bridge" || name == "--grace" || name == "--hold" || name == "--life" || name == "--protocol"
		if takes && !hasValue {
			if i+1 >= len(args) {
				return Options{}, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch {
		case a == "--":
			if i+1 >= len(args) {
				if o.Probe {
					return o, nil
				}
				return Options{}, errors.New("no program after --")
			}
			o.Argv = args[i+1:]
			return o, nil
		case name == "--protocol":
			if value != strconv.Itoa(Protocol) {
				return Options{}, fmt.Errorf("--protocol %q: this launcher reads protocol %d; muster and %s come from different releases: reinstall both from the same one", value, Protocol, LauncherName)
			}
		case name == "--write":
			o.Write = append(o.Write, value)
		case name == "--ro":
			o.ReadOnly = append(o.ReadOnly, value)
		case name == "--hide":
			o.Hide = append(o.Hide, value)
		case name == "--bridge":
			p, err := strconv.Atoi(value)
			if err != nil || p <= 0 || p > 65535 {
				return Options{}, fmt.Errorf("--bridge %q: want a TCP port", value)
			}
			o.BridgePort = p
		case name == "--grace":
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return Options{}, fmt.Errorf("--grace %q: want a duration", value)
			}
			o.Grace = d
		case name == "--hold", name == "--life":
			fd, err := strconv.Atoi(value)
			if err != nil || fd < 3 {
				return Options{}, fmt.Errorf("%s %q: want a file descriptor, 3 or more", name, value)
			}
			if name == "--hold" {
				o.Hold = fd
			} else {
				o.Life = fd
			}
		case a == "--ns":
			o.Namespaces = true
		case a == "--host-net":
			o.HostNet = true
		case a == "--probe":
			o.Probe = true
		default:
			return Options{}, fmt.Errorf("unknown argument %q (%s)", a, usage)
		}
	}
	if o.Probe {
		return o, nil
	}
	return Options{}, errors.New("no program (" + usage + ")")
}
