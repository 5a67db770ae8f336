package confine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster/internal/proc"
)

// Securebits that end root's special treatment for good on this thread
// and what it execs: uid 0 gains no capability at execve, a change of
// uid changes none, and no ambient capability can be raised (each
// locked).
const lockedSecurebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// dropCapabilities empties the calling thread's bounding and ambient
// sets and locks the securebits, so that nothing it execs can hold a
// capability, uid 0 included. A thread that holds no capability cannot
// (and need not) change them: it is then left as it is, since
// no_new_privs keeps it from gaining any.
func dropCapabilities() error {
	if !holdsAny() {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	return nil
}

// clearCapabilities empties the thread's effective, permitted and
// inheritable sets and checks that none is left.
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if holdsAny() {
		return errors.New("capabilities are still held after capset")
	}
	return nil
}

// holdsAny reports whether the calling thread holds any capability
// (effective, permitted or inheritable) or has any in its ambient set.
func holdsAny() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true
	}
	for _, d := range data {
		if d.Effective != 0 || d.Permitted != 0 || d.Inheritable != 0 {
			return true
		}
	}
	for c := 0; c <= lastCap(); c++ {
		if r, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err == nil && r == 1 {
			return true
		}
	}
	return false
}

// lastCap is the highest capability number the kernel knows.
func lastCap() int { return proc.LastCap() }
