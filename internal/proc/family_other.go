//go:build !linux

package proc

import "syscall"

// family falls back to the process group where there is no /proc.
func (f *family) signal(sig syscall.Signal) bool {
	return syscall.Kill(-f.leader, sig) == nil
}

func (f *family) reap() {}

func startOf(int) uint64 { return 0 }

// BecomeSubreaper is a no-op here.
func BecomeSubreaper() error { return nil }

// KillStale finds nothing without /proc.
func KillStale(map[string]bool, map[int]bool) int { return 0 }

// waitExited cannot wait without reaping here: Cmd.Wait does both.
func waitExited(int) bool { return false }

// SignalTree finds no descendants without /proc.
func SignalTree(int, syscall.Signal) {}
