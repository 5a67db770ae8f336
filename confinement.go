package muster

import (
	"net"
	"strconv"
	"time"
)

// ConfineCommand is the hidden subcommand of muster that confines itself
// with the kernel and then runs a program under it:
//
//	muster __confine [--protocol N] [--hold FD] [--write PATH]... [--ro PATH]... [--hide PATH]...
//	    [--grace DURATION] [--life FD] [--ns [--host-net] [--bridge PORT]] -- PROGRAM [ARG]...
//
// Under it the program may read and execute everything it can see, but
// write only the PATHs (each with everything below it) and the terminal
// and null devices. It starts the program from a thread it confined
// (capabilities dropped, no_new_privs, Landlock) and stays as its parent
// and the subreaper of all the program starts, which it ends once the
// program has exited (SIGTERM, and SIGKILL after the grace), or at once
// when muster is gone (--life FD: the end of a pipe only muster holds).
// With --ns (the process was started in new user, PID,
// mount, network and IPC namespaces: internal/proc does it) it is stage
// one of the sandbox: PID 1, which builds the mount namespace (a fresh
// /proc, a private tmpfs on /tmp and /dev/shm, the --write and --ro paths
// bound back at their own paths, the --hide paths covered), brings up the
// namespace's loopback, hands muster the --bridge listener, starts stage
// two (capabilities dropped, no_new_privs, Landlock, execve) and reaps.
// With --hold FD (internal/proc adds it when the invocation has cgroup
// v1 limits: [run] max_pids, max_memory) it first waits for one byte on
// FD, written once muster has placed it in the invocation's cgroup.
// The launcher (Confinement.Prefix) and the confine package (which parses
// it) share this format.
const ConfineCommand = "__confine"

// ConfineProtocol numbers ConfineCommand's arguments: muster passes it
// to every invocation (--protocol N), and a launcher of another protocol
// (a muster-confine left from another release) refuses it rather than
// read the arguments otherwise. Bump it whenever an option is added or
// changes meaning.
const ConfineProtocol = 3

// BridgeFD is the file descriptor on which stage one of the sandbox finds
// the socket it hands the bridge listener to muster over (SCM_RIGHTS).
const BridgeFD = 3

// Confinement is what the processes of one agent invocation or gate may
// write and see when the kernel confines them. A nil *Confinement leaves
// them unconfined.
type Confinement struct {
	// Launcher is the path of the program that confines (muster's own
	// executable, which takes ConfineCommand).
	Launcher string
	// Writable lists the absolute paths the processes may write, each
	// with everything below it.
	Writable []string
	// Namespaces starts the processes in new user, PID, mount, network
	// and IPC namespaces (the sandbox of ARCHITECTURE §8.1). Without it
	// only Landlock and the capability drop confine them, and /tmp is
	// the machine's.
	Namespaces bool
	// ReadOnly lists paths bound back read-only into the mount namespace
	// (the user's repository, caches the invocation reads), wherever
	// they lie, even under /tmp.
	ReadOnly []string
	// Hide lists paths covered in the mount namespace (an empty
	// directory, or an empty file): credentials, socket directories.
	// What Writable or ReadOnly lists below them is bound back. Without
	// namespaces Landlock keeps them unreadable instead (it grants
	// reading beside them, not below them: confine.ReadRoots).
	Hide []string
	// HostNetwork keeps the host's network (no network namespace): the
	// network policy "open". Otherwise the invocation has only its own
	// loopback, and the bridge.
	HostNetwork bool
	// Bridge, when set (and the invocation has its own network), asks
	// for a TCP listener on 127.0.0.1:Bridge.Port inside the invocation's
	// network namespace, handed to muster before the program starts.
	Bridge *Bridge
	// MaxPids and MaxMemory (bytes), when not 0, bound the invocation's
	// processes and memory by a cgroup of its own ([run] max_pids,
	// max_memory), which it is in before its program starts and which
	// is removed when it ends.
	MaxPids   int
	MaxMemory int64
}

// Bridge is the one way from a sandbox's network to muster: a listener
// bound inside the sandbox's network namespace and served from outside.
type Bridge struct {
	// Port is the TCP port on 127.0.0.1 inside the namespace (chosen by
	// muster; the namespace is new, so any port is free).
	Port int
	// Serve is called with the listener once stage one has bound it and
	// before the program starts; it must not block (serve in a
	// goroutine). The listener is closed when the invocation ends.
	Serve func(net.Listener)
}

// With returns a copy of c that may also write paths (empty ones are
// skipped); nil stays nil.
func (c *Confinement) With(paths ...string) *Confinement {
	if c == nil {
		return nil
	}
	out := c.clone()
	for _, p := range paths {
		if p != "" {
			out.Writable = append(out.Writable, p)
		}
	}
	return out
}

// WithReadOnly returns a copy of c that also sees paths, read-only, in
// its mount namespace (empty ones are skipped); nil stays nil.
func (c *Confinement) WithReadOnly(paths ...string) *Confinement {
	if c == nil {
		return nil
	}
	out := c.clone()
	for _, p := range paths {
		if p != "" {
			out.ReadOnly = append(out.ReadOnly, p)
		}
	}
	return out
}

// WithBridge returns a copy of c whose invocation gets the bridge b; nil
// stays nil.
func (c *Confinement) WithBridge(b *Bridge) *Confinement {
	if c == nil {
		return nil
	}
	out := c.clone()
	out.Bridge = b
	return out
}

func (c *Confinement) clone() *Confinement {
	out := *c
	out.Writable = append([]string(nil), c.Writable...)
	out.ReadOnly = append([]string(nil), c.ReadOnly...)
	out.Hide = append([]string(nil), c.Hide...)
	return &out
}

// Prefix returns the command line that runs a program confined by c,
// without the program: the launcher, ConfineCommand, its options and
// "--". nil gives nil (run the program as it is).
func (c *Confinement) Prefix() []string { return c.Command(0) }

// Command is Prefix with the grace stage one gives what the program
// leaves behind, between SIGTERM and the end of the namespace (0: its
// default).
func (c *Confinement) Command(grace time.Duration) []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, 4+2*(len(c.Writable)+len(c.ReadOnly)+len(c.Hide)))
	out = append(out, c.Launcher, ConfineCommand, "--protocol", strconv.Itoa(ConfineProtocol))
	for _, p := range c.Writable {
		out = append(out, "--write", p)
	}
	// Without namespaces the hide list is Landlock's to keep unreadable
	// (and what ReadOnly lists stays readable inside it).
	for _, p := range c.ReadOnly {
		out = append(out, "--ro", p)
	}
	for _, p := range c.Hide {
		out = append(out, "--hide", p)
	}
	if grace > 0 {
		out = append(out, "--grace", grace.String())
	}
	if c.Namespaces {
		out = append(out, "--ns")
		if c.HostNetwork {
			out = append(out, "--host-net")
		} else if c.Bridge != nil {
			out = append(out, "--bridge", strconv.Itoa(c.Bridge.Port))
		}
	}
	return append(out, "--")
}
