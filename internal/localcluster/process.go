package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one process started by Start.
type Process struct {
	// Name is the component: etcd, kube-apiserver, kube-controller-manager, kube-scheduler or kwok,
	// and with a real node containerd, kubelet and kube-proxy.
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat (clock ticks after boot). PID and StartTime together
	// identify the process, so a PID that the kernel recycled for another process is never signalled.
	StartTime uint64 `json:"startTime"`
	// Log is the file that the process's stdout and stderr go to.
	Log string `json:"log"`

	// cmd is set when this process started the component (not after Attach). Signalling through
	// cmd.Process uses a pidfd, and its Wait reaps the child so that its PID disappears.
	cmd *exec.Cmd
	// done is closed once cmd.Wait has returned; waitErr is its result.
	done    chan struct{}
	waitErr error
	// began is when this process started it (zero after Attach).
	began time.Time
}

// Alive reports whether the recorded process is still running (a zombie is not running).
func (p *Process) Alive() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
		}
	}
	state, start, err := procStat(p.PID)
	return err == nil && start == p.StartTime && state != "Z" && state != "X"
}

// statFields reads /proc/<pid>/stat and returns its fields from field 3 (state) on: fields[0] is
// field 3 of proc(5), fields[n] is field n+3.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may itself contain spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	return fields, nil
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// CPUTime is the user and system CPU time that process pid has used so far (fields 14 and 15 of
// /proc/<pid>/stat).
func CPUTime(pid int) (time.Duration, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procStat reads the state and the start time of pid from /proc/<pid>/stat.
func procStat(pid int) (state string, startTime uint64, err error) {
	fields, err := statFields(pid)
	if err != nil {
		return "", 0, err
	}
	// Field 22 (starttime) is fields[19].
	startTime, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("parsing start time in /proc/%d/stat: %w", pid, err)
	}
	return fields[0], startTime, nil
}

// StartProcess starts binary with args, its output written to logPath. With detach the process gets
// a session of its own and outlives the caller (the CLI); otherwise the kernel kills it when the
// caller dies, so that a test binary killed by its timeout leaves no control plane behind.
// (Pdeathsig fires when the forking OS thread exits; Go ends threads only under a goroutine that
// exits while locked with runtime.LockOSThread, which test code has no reason to do.)
func StartProcess(name, binary string, args, env []string, logPath string, detach bool) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating log file of %s: %w", name, err)
	}
	// The child gets its own copy of the descriptor, so ours is closed once it has started.
	defer func() { _ = logFile.Close() }()

	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, Log: logPath, cmd: cmd, done: make(chan struct{}), began: time.Now()}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if _, p.StartTime, err = procStat(p.PID); err != nil {
		// It exited at once (bad flags, missing library): stop the bookkeeping and show its log.
		<-p.done
		return nil, fmt.Errorf("%s exited at start (%v); see %s%s", name, p.waitErr, logPath, logTail(logPath))
	}
	return p, nil
}

// Stop sends SIGTERM, waits up to grace for the process to exit, then sends SIGKILL.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.waitGone(grace) {
		return nil
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if p.waitGone(10 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) still running after SIGKILL", p.Name, p.PID)
}

func (p *Process) signal(sig syscall.Signal) error {
	var err error
	if p.cmd != nil {
		err = p.cmd.Process.Signal(sig)
	} else {
		err = syscall.Kill(p.PID, sig)
	}
	if err != nil && p.Alive() {
		return fmt.Errorf("sending %v to %s (pid %d): %w", sig, p.Name, p.PID, err)
	}
	return nil
}

// waitGone reports whether the process has exited (and, if it is our child, been reaped) within timeout.
func (p *Process) waitGone(timeout time.Duration) bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(timeout):
			return false
		}
	}
	deadline := time.Now().Add(timeout)
	for p.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// logTail returns the last lines of a log file, formatted to end an error message.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "; its last lines:\n\t" + strings.Join(lines, "\n\t")
}
