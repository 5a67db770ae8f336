package proc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// SandboxAttr returns the attributes that start a process in the
// sandbox's new namespaces (ARCHITECTURE §8.1): user (the invoking uid
// and gid mapped to themselves, never to 0 for another user), PID,
// mount, IPC and, unless hostNet, network; in its own session. The
// process keeps its capabilities inside the new user namespace across
// its execve (as ambient capabilities: stage one needs them to mount),
// which stage one drops, on the thread that starts the program, before
// the program runs.
func SandboxAttr(hostNet bool) *syscall.SysProcAttr {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC)
	if !hostNet {
		flags |= unix.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	caps := make([]uintptr, 0, 64)
	for c := 0; c <= LastCap(); c++ {
		caps = append(caps, uintptr(c))
	}
	return &syscall.SysProcAttr{
		Setsid:      true,
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: caps,
	}
}

// LastCap is the highest capability number the kernel knows, read once
// (a confined start asks for it at every capability it drops).
func LastCap() int { return lastCap() }

var lastCap = sync.OnceValue(readLastCap)

func readLastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return unix.CAP_LAST_CAP
	}
	return n
}

// bridgePair is muster's end of the socket pair over which stage one
// hands the bridge listener.
type bridgePair struct {
	mine  *os.File
	child *os.File // stage one's end, at muster.BridgeFD there
	l     net.Listener
}

// closeAfter closes l with the pair, when Run returns.
func (b *bridgePair) closeAfter(l net.Listener) { b.l = l }

func newBridgePair() (*bridgePair, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("bridge socket pair: %w", err)
	}
	return &bridgePair{mine: os.NewFile(uintptr(fds[0]), "bridge"), child: os.NewFile(uintptr(fds[1]), "bridge-child")}, nil
}

// receive waits for stage one's listener (or its end: then an error).
func (b *bridgePair) receive() (net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(b.mine.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	if n == 0 && oobn == 0 {
		return nil, errors.New("bridge: the sandbox ended before it bound the listener")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("bridge: no listener in the message: %w", err)
	}
	if len(msgs) != 1 {
		return nil, errors.New("bridge: no listener in the message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, fmt.Errorf("bridge: no listener in the message: %w", err)
	}
	if len(fds) != 1 {
		return nil, errors.New("bridge: no listener in the message")
	}
	f := os.NewFile(uintptr(fds[0]), "bridge-listener")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return l, nil
}

// proceed lets stage one start the program.
func (b *bridgePair) proceed() error {
	_, err := b.mine.Write([]byte{'G'})
	return err
}

func (b *bridgePair) close() {
	if b.l != nil {
		b.l.Close()
	}
	b.mine.Close()
	b.child.Close()
}
