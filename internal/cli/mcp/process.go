package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// processFile is where a run started by muster mcp records its process,
// in the run directory, so that cancel finds it (and only it) again.
const processFile = "mcp-process.json"

// outputFile gets a detached run's stdout and stderr.
const outputFile = "output.log"

// process identifies a detached muster run: its pid, and when the kernel
// says it started, so that a pid reused by another process is never
// signalled.
type process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // /proc/PID/stat starttime, in clock ticks since boot
	Run   string `json:"run"`
	Exe   string `json:"exe"`
}

// startDetached starts argv as a new session (it outlives this server
// and its terminal) with its output in dir, records it, and reaps it.
func startDetached(dir, runID, repo string, argv []string) (*process, error) {
	out, err := os.OpenFile(filepath.Join(dir, outputFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = out, out // stdin: /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{PID: cmd.Process.Pid, Run: runID, Exe: argv[0]}
	p.Start, _ = startTime(p.PID)
	// The server reaps its child; once the server is gone, init does.
	go func() { _ = cmd.Wait() }()
	data, err := json.Marshal(p)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, processFile), data, 0o644)
	}
	return p, err
}

// readProcess reads the process record of a run directory.
func readProcess(dir string) (*process, error) {
	data, err := os.ReadFile(filepath.Join(dir, processFile))
	if err != nil {
		return nil, err
	}
	var p process
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", processFile, err)
	}
	if p.PID <= 1 {
		return nil, fmt.Errorf("%s: bad pid %d", processFile, p.PID)
	}
	return &p, nil
}

// errGone says the recorded process no longer runs (it ended, or its pid
// now belongs to another process).
var errGone = errors.New("the run's process is not running")

// alive checks that the recorded process is still the one muster mcp
// started: the same start time, and a command line that runs this run.
func (p *process) alive() error {
	start, err := startTime(p.PID)
	if err != nil {
		return errGone
	}
	if p.Start != 0 && start != p.Start {
		return errGone
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil {
		return errGone
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if !hasPair(args, "--run-id", p.Run) || !hasArg(args, "run") {
		return errGone
	}
	if st := state(p.PID); st == "Z" || st == "X" {
		return errGone
	}
	return nil
}

// interrupt sends SIGINT to the process once it is known to be the run's.
func (p *process) interrupt() error {
	if err := p.alive(); err != nil {
		return err
	}
	return syscall.Kill(p.PID, syscall.SIGINT)
}

// startTime reads field 22 of /proc/PID/stat.
func startTime(pid int) (uint64, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) < 20 {
		return 0, errors.New("short stat")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

func state(pid int) string {
	fields, err := statFields(pid)
	if err != nil || len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// statFields returns the fields of /proc/PID/stat after the command name
// (which may hold spaces and parentheses): state first.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("bad stat")
	}
	return strings.Fields(s[i+1:]), nil
}

func hasArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

func hasPair(args []string, flag, value string) bool {
	for i, x := range args {
		if x == flag+"="+value || (x == flag && i+1 < len(args) && args[i+1] == value) {
			return true
		}
	}
	return false
}
