package confine

import "syscall"

// Compatible is compatible, for the tests of package confine_test.
var Compatible = compatible

// Usage is the ConfineCommand's usage line, which lists its options.
const Usage = usage

// StartHere starts the program confined as startConfined does, but from
// the calling goroutine (locked to its thread), and waits for it: the
// first thread's test calls it on the process's first thread.
func StartHere(path string, argv, writable []string) error {
	ch := make(chan startResult, 1)
	startOn(ch, path, argv, writable, nil, false)
	r := <-ch
	if r.err != nil {
		return r.err
	}
	var ws syscall.WaitStatus
	_, err := syscall.Wait4(r.pid, &ws, 0, nil)
	return err
}
