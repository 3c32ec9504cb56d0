package preview

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// workerCluster is a cluster of 6 nodes of 4 CPUs, half in pool a and half in pool b, and 12
// pods of 2 CPUs of schedulerName, 8 of them bound, each with annotations and environment that
// scheduling does not read (the worker's snapshot leaves them out).
func workerCluster(schedulerName string) []runtime.Object {
	var objs []runtime.Object
	for i := range 6 {
		pool := "a"
		if i%2 == 1 {
			pool = "b"
		}
		objs = append(objs, testutil.MakeNode(fmt.Sprintf("node-%d", i)).Label("pool", pool).
			Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "8Gi", corev1.ResourcePods: "110"}).Ready().Obj())
	}
	objs = append(objs, &corev1.Namespace{})
	objs[len(objs)-1].(*corev1.Namespace).Name = "team"
	for i := range 12 {
		pod := testutil.MakePod(fmt.Sprintf("pod-%02d", i), "team").SchedulerName(schedulerName).Request(corev1.ResourceCPU, "2").Obj()
		pod.Annotations = map[string]string{"team.example.com/notes": strings.Repeat("x", 1024)}
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		if i < 8 {
			pod.Spec.NodeName = fmt.Sprintf("node-%d", i%6)
			pod.Status.Phase = corev1.PodRunning
		}
		objs = append(objs, pod)
	}
	return objs
}

// workerRequest is the preview of a change from the default profile "team" to one that keeps its
// pods to the nodes of pool b.
func workerRequest(t *testing.T) Request {
	t.Helper()
	render := func(p *schedulingv1alpha1.SchedulerProfile) *profile.Config {
		cfg, err := profile.Render(p, profile.Settings{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	running := render(testutil.MakeProfile("team").Obj())
	changed := testutil.MakeProfile("team").PluginConfig("NodePool", `{"nodeSelector":{"matchLabels":{"pool":"b"}}}`).Obj()
	changed.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
	next := render(changed)
	return Request{
		Name: "team", Key: Key{UID: "u", From: running.Hash, To: next.Hash}, SchedulerNames: []string{running.SchedulerName},
		Running: &simulate.Profile{Name: running.Hash, Config: running.YAML},
		Next:    simulate.Profile{Name: next.Hash, Config: next.YAML},
	}
}

// TestPreviewWorkerMatchesInProcess: a preview through the worker process gives what
// simulate.PreviewProfile gives in this process on the same cluster, although the worker's
// snapshot leaves out pods' annotations and environment. On main there was no worker: run called
// PreviewProfile in the operator's process, and this test does not compile (no runWorker).
func TestPreviewWorkerMatchesInProcess(t *testing.T) {
	req := workerRequest(t)
	client := fake.NewClientset(workerCluster(req.SchedulerNames[0])...)
	pv := New(client, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := pv.runWorker(ctx, req)
	if err != nil {
		t.Fatalf("the preview through the worker: %v", err)
	}
	cluster, err := simulate.LiveCluster(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	want, err := simulate.PreviewProfile(ctx, cluster, req.SchedulerNames, req.Running, req.Next, pv.opts.MaxPods, simulate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the worker's preview (-in process +worker):\n%s", diff)
	}
	if want.New.Unschedulable == 0 || want.Pods != 12 {
		t.Errorf("the change leaves %d of %d pods unschedulable: want a preview that some pods fail, of all 12", want.New.Unschedulable, want.Pods)
	}
}

// TestPreviewWorkerBudgets: a worker past its memory budget, or a cluster past the object budget,
// ends the preview incomplete, with nothing decided and the flag to raise named, in status and
// in Guard's refusal; the operator's process (this test's) goes on. On main neither budget
// existed: the preview decided, and the operator's memory took whatever the cluster needed.
func TestPreviewWorkerBudgets(t *testing.T) {
	tests := []struct {
		name           string
		opts           Options
		wantIncomplete string
		wantFlag       string
	}{
		{
			// No Go process runs in 1Mi of resident memory: the worker is past it at its first poll.
			name: "memory", opts: Options{MemoryLimit: 1 << 20},
			wantIncomplete: "the preview ran out of its memory budget of 1Mi (--preview-memory-limit); nothing was decided",
			wantFlag:       memoryLimitFlag,
		},
		{
			name: "objects", opts: Options{MaxObjects: 5},
			wantIncomplete: "the preview ran out of its object budget of 5 objects (--preview-max-objects): the cluster has more of the kinds scheduling reads; nothing was decided",
			wantFlag:       maxObjectsFlag,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := workerRequest(t)
			pv := New(fake.NewClientset(workerCluster(req.SchedulerNames[0])...), tt.opts)
			o, keep := pv.run(context.Background(), req)
			if !keep {
				t.Fatal("the preview was not kept")
			}
			if o.decided || o.spent != tt.wantFlag || o.status.Failure != "" {
				t.Errorf("decided %t, spent %q, failure %q; want undecided, spent %q, no failure", o.decided, o.spent, o.status.Failure, tt.wantFlag)
			}
			if diff := cmp.Diff(tt.wantIncomplete, o.status.Incomplete); diff != "" {
				t.Errorf("status.preview.incomplete (-want +got):\n%s", diff)
			}
			g := decide(schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewGuard}, o)
			if g.Reason != schedulingv1alpha1.ReasonPreviewRefused || !strings.Contains(g.Message, "have the operator's "+tt.wantFlag+" raised") {
				t.Errorf("Guard: %+v, want a refusal that names %s", g, tt.wantFlag)
			}
			if !strings.HasPrefix(Summary(o.status), "The preview of configuration "+req.Key.To+" is incomplete: "+tt.wantIncomplete) {
				t.Errorf("event %q, want it to report the incomplete preview", Summary(o.status))
			}
		})
	}
}

// TestPreviewWorkerCancelled: a preview cancelled while it streams the snapshot (a newer change,
// the operator's stop) kills its worker, which is gone once run returns; while it ran, its
// oom_score_adj was 1000. On main the preview had
// no worker to find, and this test fails at finding it.
func TestPreviewWorkerCancelled(t *testing.T) {
	req := workerRequest(t)
	client := fake.NewClientset(workerCluster(req.SchedulerNames[0])...)
	listing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	client.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { close(listing) })
		<-release
		return false, nil, nil
	})
	pv := New(client, Options{})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan bool)
	go func() {
		_, keep := pv.run(ctx, req)
		done <- keep
	}()
	select {
	case <-listing:
	case <-time.After(30 * time.Second):
		t.Fatal("the preview did not list the nodes")
	}
	pids := previewWorkers(t)
	if len(pids) != 1 {
		t.Fatalf("preview workers of this process: %v, want one", pids)
	}
	// The kernel's OOM killer takes the worker before the operator.
	if adj, err := os.ReadFile("/proc/" + strconv.Itoa(pids[0]) + "/oom_score_adj"); err != nil || strings.TrimSpace(string(adj)) != "1000" {
		t.Errorf("the worker's oom_score_adj is %q (%v), want 1000", adj, err)
	}
	cancel(errSuperseded)
	close(release)
	select {
	case keep := <-done:
		if keep {
			t.Error("a cancelled preview was kept")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled preview did not end")
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pids[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cancelled preview's worker %d is still there: %v", pids[0], err)
	}
}

// previewWorkers are the pids of this process's children that run as preview workers.
func previewWorkers(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := strconv.Itoa(os.Getpid())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, then the parent's pid.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if len(fields) > 1 && fields[1] == self && strings.Contains(string(cmdline), WorkerCommand) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestWorkerLastLine: a failed worker's preview failure is what it said last on stderr, or the
// line of its panic rather than the last frame of the stack trace that follows.
func TestWorkerLastLine(t *testing.T) {
	tests := []struct {
		name, stderr, want string
	}{
		{name: "an error", stderr: "reading the preview's request and snapshot: object 3: bad\n", want: "reading the preview's request and snapshot: object 3: bad"},
		{name: "a panic", stderr: "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1d\nexit status 2\n", want: "panic: runtime error: index out of range"},
		{name: "out of memory", stderr: "fatal error: runtime: out of memory\n\nruntime stack:\n", want: "fatal error: runtime: out of memory"},
		{name: "nothing", stderr: "", want: "it wrote nothing on stderr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w tailWriter
			if _, err := w.Write([]byte(strings.Repeat("noise\n", tailBytes/6+10) + tt.stderr)); err != nil {
				t.Fatal(err)
			}
			if tt.stderr == "" {
				w = tailWriter{}
			}
			if diff := cmp.Diff(tt.want, w.lastLine()); diff != "" {
				t.Errorf("lastLine (-want +got):\n%s", diff)
			}
			if len(w.buf) > tailBytes {
				t.Errorf("the tail keeps %d bytes, more than %d", len(w.buf), tailBytes)
			}
		})
	}
}

// TestPreviewWorkerCrash: a worker that crashes makes a failed preview that says why, in the
// words of its panic, and the operator's process (this test's) goes on. On main a panic of the
// simulation was the operator's own.
func TestPreviewWorkerCrash(t *testing.T) {
	t.Setenv(crashWorkerEnv, "1")
	req := workerRequest(t)
	pv := New(fake.NewClientset(workerCluster(req.SchedulerNames[0])...), Options{})
	o, keep := pv.run(context.Background(), req)
	if !keep || o.decided {
		t.Fatalf("kept %t, decided %t: want a kept, undecided preview", keep, o.decided)
	}
	const want = "the preview's worker process failed (exit status 2): panic: the preview worker crashed on purpose"
	if diff := cmp.Diff(want, o.status.Failure); diff != "" {
		t.Errorf("status.preview.failure (-want +got):\n%s", diff)
	}
}

// TestRunPreviewWorkerBadInput: a worker that cannot read its input says why on stderr, which
// the operator reports as the failed preview's reason, and exits 1 without a result.
func TestRunPreviewWorkerBadInput(t *testing.T) {
	tests := []struct {
		name, stdin, wantStderr string
	}{
		{name: "no request", stdin: "", wantStderr: "reading the preview's request: EOF\n"},
		{name: "a request that is no JSON", stdin: "request\n", wantStderr: "reading the preview's request: invalid character 'r' looking for beginning of value\n"},
		{name: "an object of no kind", stdin: "{}\n{\"apiVersion\":\"v1\",\"kind\":\"Nothing\"}\n", wantStderr: "reading the preview's snapshot: object 1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := RunWorker(strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != 1 || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), tt.wantStderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, and stderr beginning %q", code, stdout.String(), stderr.String(), tt.wantStderr)
			}
		})
	}
}

// TestPreviewWorkerHoldsNoGateLock: a preview of a configuration with feature gates completes
// while the operator's process holds its process-wide feature gate for writing, as the
// validation of a profile with feature gates does: the worker sets the gates in its own process.
// On main the preview's simulations took that lock in the operator's process, so that this
// preview waited for the validation (the test fails at its timeout), and every validation waited
// for a running preview.
func TestPreviewWorkerHoldsNoGateLock(t *testing.T) {
	req := workerRequest(t)
	req.Next.FeatureGates = map[string]bool{"GenericWorkload": true}
	pv := New(fake.NewClientset(workerCluster(req.SchedulerNames[0])...), Options{})
	var o *outcome
	err := profile.WithGates(map[string]bool{"GenericWorkload": false}, func() {
		done := make(chan *outcome, 1)
		go func() {
			out, _ := pv.run(context.Background(), req)
			done <- out
		}()
		select {
		case o = <-done:
		case <-time.After(30 * time.Second):
			t.Error("the preview did not end while this process held the feature gate lock")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if o != nil && (!o.decided || o.status.Failure != "") {
		t.Errorf("the preview with feature gates: decided %t, failure %q, incomplete %q; want it decided", o.decided, o.status.Failure, o.status.Incomplete)
	}
}

// TestBothAtOnce: a worker simulates both revisions at once only with a memory budget at least
// bothAtOnceShare times its snapshot's heap.
func TestBothAtOnce(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		heap, limit int64
		want        bool
	}{
		{heap: 14 * mib, limit: 512 * mib, want: true},
		{heap: 512 * mib / bothAtOnceShare, limit: 512 * mib, want: true},
		{heap: 512*mib/bothAtOnceShare + 1, limit: 512 * mib, want: false},
		{heap: 100 * mib, limit: 512 * mib, want: false},
		{heap: 100 * mib, limit: 4096 * mib, want: true},
		{heap: 1, limit: 0, want: false},
	} {
		if got := bothAtOnce(tc.heap, tc.limit); got != tc.want {
			t.Errorf("bothAtOnce(%d, %d) = %v, want %v", tc.heap, tc.limit, got, tc.want)
		}
	}
}
