package preview

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

// A preview's simulations run in a child process of the operator, the preview worker: the
// simulation builds a scheduler on a copy of the cluster, which takes memory in proportion to the
// cluster, and sets the process-wide feature gates of the profile (profile.WithGates) for its
// whole run. In a process of its own, its memory is bounded and measured apart from the operator's
// (the operator kills it past Options.MemoryLimit, and the kernel's OOM killer takes it
// first), its CPU time is its own, and its feature gates hold no lock that the operator's
// validations wait on. The operator streams the snapshot to the worker's stdin page by page as it
// reads it, and never holds the whole cluster.

// WorkerCommand is the hidden subcommand of the manager binary that runs a preview worker
// (RunWorker). The operator starts its own executable with it; the test binaries that run
// previews dispatch to RunWorker from their TestMain when it is their first argument.
const WorkerCommand = "preview-worker"

// memoryPoll is how often the operator reads a preview worker's resident memory.
const memoryPoll = 50 * time.Millisecond

// workerGoMemLimit is the share of the memory budget that a worker's garbage collector aims to
// stay under (GOMEMLIMIT): the rest is what the Go runtime's estimate leaves out (stacks not yet
// returned, fragmentation) before the operator's kill at the whole budget.
const workerGoMemLimit = 0.9

// previewWorkerRequest is the first line of a preview worker's stdin; the snapshot's objects
// follow, one JSON object with its apiVersion and kind a line, until the end of the input.
type previewWorkerRequest struct {
	SchedulerNames []string          `json:"schedulerNames"`
	Running        *simulate.Profile `json:"running,omitempty"`
	Next           simulate.Profile  `json:"next"`
	MaxPods        int               `json:"maxPods"`
	CPULimit       time.Duration     `json:"cpuLimit"`
	// Deadline is when the preview's time budget ends: each simulation may take half of what is
	// left of it when the snapshot has arrived. Zero is none.
	Deadline time.Time `json:"deadline"`
	// MemoryLimit is the preview's memory budget in bytes, of which the worker's garbage
	// collector aims at workerGoMemLimit; 0 is none.
	MemoryLimit int64 `json:"memoryLimit,omitempty"`
}

// previewWorkerResult is what a preview worker writes on its stdout: the preview, or the error
// that ended it, and when that error is a simulation's limit, the limit.
type previewWorkerResult struct {
	Preview *simulate.ProfilePreview `json:"preview,omitempty"`
	Error   string                   `json:"error,omitempty"`
	Limit   *simulate.LimitError     `json:"limit,omitempty"`
}

// previewBudgetError ends a preview that ran out of a budget of the worker's: too many objects to
// read, or too much memory. It decides nothing, and names the flag to raise.
type previewBudgetError struct {
	incomplete, flag string
}

func (e *previewBudgetError) Error() string { return e.incomplete }

// RunWorker is a preview worker: it reads a request and a snapshot from stdin, previews the
// change (simulate.PreviewProfile), writes the result as JSON to stdout and returns the exit
// code. An error that it can say is a result; what it cannot (its input does not decode) goes to
// stderr, last line last, with exit code 1.
func RunWorker(stdin io.Reader, stdout, stderr io.Writer) int {
	// The scheduler logs through klog: its lines are not the worker's output, and its stderr is
	// the operator's reason when it fails.
	klog.SetLogger(logr.Discard())
	in := bufio.NewReaderSize(stdin, 1<<20)
	req, err := readPreviewWorkerRequest(in)
	if err != nil {
		fmt.Fprintf(stderr, "reading the preview's request: %v\n", err)
		return 1
	}
	// This process only simulates: the garbage collector's setting and memory limit are its own,
	// set before the snapshot comes in.
	_, gogcSet := os.LookupEnv("GOGC")
	if !gogcSet {
		debug.SetGCPercent(simulate.GCPercent)
	}
	if req.MemoryLimit > 0 {
		debug.SetMemoryLimit(int64(float64(req.MemoryLimit) * workerGoMemLimit))
	}
	cluster, err := readSnapshot(in)
	if err != nil {
		fmt.Fprintf(stderr, "reading the preview's snapshot: %v\n", err)
		return 1
	}
	atOnce := bothAtOnce(liveHeap(), req.MemoryLimit)
	if atOnce && !gogcSet {
		// Two simulations at once make garbage twice as fast: collecting at half the target
		// keeps the worker's peak well within its budget (2000 pods on 1000 nodes: 360 to 375
		// MiB, against 480 to 500 MiB at the whole target, in about the same time).
		debug.SetGCPercent(simulate.GCPercent / 2)
	}
	ctx := context.Background()
	var limit time.Duration // none: simulate.DefaultLimit
	if !req.Deadline.IsZero() {
		limit = max(time.Until(req.Deadline)/2, time.Millisecond)
	}
	res, err := simulate.PreviewProfile(ctx, cluster, req.SchedulerNames, req.Running, req.Next, req.MaxPods,
		simulate.Options{Limit: limit, CPULimit: req.CPULimit, BothAtOnce: atOnce})
	out := previewWorkerResult{Preview: res}
	if err != nil {
		out.Error = err.Error()
		errors.As(err, &out.Limit)
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "writing the preview's result: %v\n", err)
		return 1
	}
	return 0
}

// bothAtOnceShare: a worker simulates the running and the new revision at the same time, which
// takes about a quarter less time on two cores, when the snapshot it read takes at most this
// share of its memory budget; otherwise one after the other. A simulation holds several times the
// snapshot (its scheduler's caches and the clientset they list): the preview of 2000 pods on 1000
// nodes held 14 MiB of snapshot and peaked at 250 MiB with both at once and GOGC=100 (make
// bench-preview). A 24th of the default 512Mi is 21 MiB, which leaves room for both; a cluster
// whose snapshot is larger is simulated one revision after the other.
const bothAtOnceShare = 24

// bothAtOnce tells whether a worker with memoryLimit (0: none) simulates both revisions at the
// same time, with snapshotHeap bytes of live heap after reading its snapshot. Without a budget it
// does not: nothing would bound the second simulation.
func bothAtOnce(snapshotHeap, memoryLimit int64) bool {
	return memoryLimit > 0 && snapshotHeap*bothAtOnceShare <= memoryLimit
}

// liveHeap is the live heap after a garbage collection.
func liveHeap() int64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// readPreviewWorkerRequest reads the request, the first line.
func readPreviewWorkerRequest(in *bufio.Reader) (*previewWorkerRequest, error) {
	line, err := in.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	req := &previewWorkerRequest{}
	if err := json.Unmarshal(line, req); err != nil {
		return nil, err
	}
	return req, nil
}

// readSnapshot reads the snapshot's objects, one a line, until the end of the input.
func readSnapshot(in *bufio.Reader) (*simulate.Cluster, error) {
	decoder := scheme.Codecs.UniversalDeserializer()
	cluster := &simulate.Cluster{}
	for n := 1; ; n++ {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			obj, _, derr := decoder.Decode(line, nil, nil)
			if derr != nil {
				return nil, fmt.Errorf("object %d: %w", n, derr)
			}
			cluster.Objects = append(cluster.Objects, obj)
		}
		if errors.Is(err, io.EOF) {
			return cluster, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// previewWorker is one preview worker process, as the operator runs it.
type previewWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout bytes.Buffer
	stderr tailWriter
	// overMemory is set when the operator killed the worker past its memory budget.
	overMemory atomic.Bool
	// limit is the memory budget, 0 for none.
	limit int64
	// peakRSS is the largest resident memory of the worker read while it ran, and once it ended
	// its ru_maxrss, in bytes.
	peakRSS atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup
}

// runWorker previews req in a preview worker: it starts the worker, streams it the snapshot that
// it reads from the cluster, page by page, bounded by opts.MaxObjects, and watches its memory
// against opts.MemoryLimit until it ends. ctx ending kills the worker. The error is a
// *previewBudgetError when the worker ran out of a budget of its own.
func (pv *Previewer) runWorker(ctx context.Context, req Request) (*simulate.ProfilePreview, error) {
	deadline, _ := ctx.Deadline()
	w, err := startPreviewWorker(ctx, pv.opts.MemoryLimit)
	if err != nil {
		return nil, err
	}
	streamErr := w.stream(ctx, pv, previewWorkerRequest{
		SchedulerNames: req.SchedulerNames, Running: req.Running, Next: req.Next,
		MaxPods: pv.opts.MaxPods, CPULimit: pv.opts.CPULimit, Deadline: deadline, MemoryLimit: pv.opts.MemoryLimit,
	})
	if streamErr != nil {
		// A worker that the snapshot failed, or outgrew, has nothing to say.
		_ = w.cmd.Process.Kill()
	}
	waitErr := w.wait()
	log.FromContext(ctx).V(1).Info("The preview worker ended", "SchedulerProfile", req.Name, "peakRSS", w.peakRSS.Load())
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case w.overMemory.Load():
		return nil, &previewBudgetError{flag: memoryLimitFlag, incomplete: fmt.Sprintf("%s of %s (%s); nothing was decided",
			outOfMemory, formatBytes(pv.opts.MemoryLimit), memoryLimitFlag)}
	case streamErr != nil && !errors.Is(streamErr, errWorkerInput):
		return nil, streamErr
	case waitErr != nil:
		return nil, fmt.Errorf("the preview's worker process failed (%v): %s", waitErr, w.stderr.lastLine())
	}
	return w.result()
}

// errWorkerInput is the error of a write to a worker that has ended: its exit says why.
var errWorkerInput = errors.New("the preview worker stopped reading its input")

// startPreviewWorker starts the operator's own executable as a preview worker, which ctx ending
// kills, and the watch of its memory against limit (0: none).
func startPreviewWorker(ctx context.Context, limit int64) (*previewWorker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the operator's executable for the preview worker: %w", err)
	}
	w := &previewWorker{done: make(chan struct{}), limit: limit}
	w.cmd = exec.CommandContext(ctx, self, WorkerCommand)
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	w.cmd.SysProcAttr = workerSysProcAttr()
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("starting the preview worker: %w", err)
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the preview worker: %w", err)
	}
	pid := w.cmd.Process.Pid
	// Best effort: when the node runs out of memory, the kernel kills the worker rather than the
	// operator. Raising a process's own score needs no privilege.
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("1000"), 0)
	w.wg.Go(func() { w.watchMemory(pid) })
	return w, nil
}

// watchMemory reads the worker's resident memory every memoryPoll until it ends, and kills it
// once it is past its budget.
func (w *previewWorker) watchMemory(pid int) {
	ticker := time.NewTicker(memoryPoll)
	defer ticker.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-ticker.C:
		}
		rss, err := residentMemory(pid)
		if err != nil {
			continue // not Linux, or the worker has just ended
		}
		if rss > w.peakRSS.Load() {
			w.peakRSS.Store(rss)
		}
		if w.limit > 0 && rss > w.limit {
			w.overMemory.Store(true)
			_ = w.cmd.Process.Kill()
			return
		}
	}
}

// stream writes the request and then the snapshot to the worker's stdin, and closes it. It stops
// at the first error: the cluster's, too many objects (a *previewBudgetError), or errWorkerInput
// when the worker no longer reads.
func (w *previewWorker) stream(ctx context.Context, pv *Previewer, req previewWorkerRequest) error {
	out := bufio.NewWriterSize(w.stdin, 1<<16)
	enc := json.NewEncoder(out)
	if err := enc.Encode(req); err != nil {
		return errWorkerInput
	}
	objects := 0
	_, err := simulate.Snapshot(ctx, pv.client, simulate.SnapshotOptions{StripPods: true, StripAnnotations: true}, func(obj runtime.Object) error {
		if objects++; objects > pv.opts.MaxObjects {
			return &previewBudgetError{flag: maxObjectsFlag, incomplete: fmt.Sprintf("%s of %d objects (%s): the cluster has more of the kinds scheduling reads; nothing was decided",
				outOfObjects, pv.opts.MaxObjects, maxObjectsFlag)}
		}
		if err := enc.Encode(obj); err != nil {
			return fmt.Errorf("%w: %w", errWorkerInput, err)
		}
		return nil
	})
	var budget *previewBudgetError
	if errors.As(err, &budget) {
		return budget
	}
	if errors.Is(err, errWorkerInput) {
		return errWorkerInput
	}
	if err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return errWorkerInput
	}
	if err := w.stdin.Close(); err != nil {
		return errWorkerInput
	}
	return nil
}

// wait waits for the worker to end and stops the watch of its memory.
func (w *previewWorker) wait() error {
	err := w.cmd.Wait()
	close(w.done)
	w.wg.Wait()
	if peak := peakResidentMemory(w.cmd.ProcessState); peak > w.peakRSS.Load() {
		w.peakRSS.Store(peak)
	}
	// A worker past its budget between two polls went past it all the same: the budget does not
	// depend on when it was read.
	if w.limit > 0 && w.peakRSS.Load() > w.limit {
		w.overMemory.Store(true)
	}
	return err
}

// result decodes what a worker that exited normally wrote.
func (w *previewWorker) result() (*simulate.ProfilePreview, error) {
	var res previewWorkerResult
	if err := json.Unmarshal(w.stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("reading the result of the preview's worker process: %w (%s)", err, w.stderr.lastLine())
	}
	switch {
	case res.Limit != nil:
		return nil, res.Limit
	case res.Error != "":
		return nil, errors.New(res.Error)
	case res.Preview == nil || res.Preview.Preview == nil:
		return nil, errors.New("the preview's worker process wrote no preview")
	}
	return res.Preview, nil
}

// tailWriter keeps the last tailBytes bytes written to it: the end of a worker's stderr.
type tailWriter struct {
	buf []byte
}

const tailBytes = 8 << 10

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLine is what a failed worker said last: the line of a Go runtime's panic or fatal error,
// whose stack trace follows it, or else the last line that is not blank.
func (t *tailWriter) lastLine() string {
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return "it wrote nothing on stderr"
	}
	return last
}

// residentMemory is the VmRSS of the process pid, in bytes, from /proc.
func residentMemory(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading VmRSS of process %d: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("process %d has no VmRSS", pid)
}

// formatBytes is a number of bytes as a quantity: 256Mi.
func formatBytes(b int64) string {
	return resource.NewQuantity(b, resource.BinarySI).String()
}
