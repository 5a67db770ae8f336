//go:build !linux

package proc

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// SandboxAttr returns plain session attributes: there are no namespaces
// here (the confine package never asks for them).
func SandboxAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

type bridgePair struct{ child *os.File }

func newBridgePair() (*bridgePair, error) { return nil, errors.New("no bridge on this system") }

func (b *bridgePair) receive() (net.Listener, error) {
	return nil, errors.New("no bridge on this system")
}
func (b *bridgePair) proceed() error          { return nil }
func (b *bridgePair) close()                  {}
func (b *bridgePair) closeAfter(net.Listener) {}
