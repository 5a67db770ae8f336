package muster

// ConfineCommand is the hidden subcommand of muster that confines itself
// with the kernel and then runs a program in its place (same pid, same
// process group):
//
//	muster __confine [--write PATH]... -- PROGRAM [ARG]...
//
// Under it the program may read and execute everything, but write only
// the PATHs (each with everything below it), /tmp, /dev/shm, and the
// terminal and null devices. The launcher (Confinement.Prefix) and the
// confine package (which parses it) share this format.
const ConfineCommand = "__confine"

// Confine modes of [run] confine.
const (
	ConfineAuto     = "auto"     // confine where the kernel can; say so once where it cannot
	ConfineRequired = "required" // refuse to run where the kernel cannot confine (exit 3)
	ConfineOff      = "off"      // never confine
)

// Confinement is what the processes of one agent invocation or gate may
// write when the kernel confines them. A nil *Confinement leaves them
// unconfined.
type Confinement struct {
	// Launcher is the path of the program that confines (muster's own
	// executable, which takes ConfineCommand).
	Launcher string
	// Writable lists the absolute paths the processes may write, each
	// with everything below it.
	Writable []string
}

// With returns a copy of c that may also write paths (empty ones are
// skipped); nil stays nil.
func (c *Confinement) With(paths ...string) *Confinement {
	if c == nil {
		return nil
	}
	out := &Confinement{Launcher: c.Launcher, Writable: append([]string(nil), c.Writable...)}
	for _, p := range paths {
		if p != "" {
			out.Writable = append(out.Writable, p)
		}
	}
	return out
}

// Prefix returns the command line that runs a program confined by c,
// without the program: the launcher, ConfineCommand, a --write for each
// writable path and "--". nil gives nil (run the program as it is).
func (c *Confinement) Prefix() []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, 3+2*len(c.Writable))
	out = append(out, c.Launcher, ConfineCommand)
	for _, p := range c.Writable {
		out = append(out, "--write", p)
	}
	return append(out, "--")
}
