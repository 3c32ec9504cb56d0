package preview

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

func TestNewPreviewOutcome(t *testing.T) {
	key := Key{From: "aaa", To: "bbb"}
	res := &simulate.ProfilePreview{Total: 6, Preview: &simulate.Preview{
		Pods:    4,
		Moved:   []simulate.Move{{Pod: "ns/a"}, {Pod: "ns/b"}, {Pod: "ns/x"}},
		Running: &simulate.RevisionOutcome{Unschedulable: 1, NodesUsed: 2},
		New:     simulate.RevisionOutcome{Unschedulable: 3, NodesUsed: 1},
		NewlyUnschedulable: []simulate.PodResult{
			{Pod: "ns/a", Reason: "r"}, {Pod: "ns/b", Reason: "r"}, {Pod: "ns/c", Reason: "r"}, {Pod: "ns/d", Reason: "r"},
		},
	}}
	start := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.Local)
	opts := Options{MaxPods: 4}.withDefaults()
	o := newOutcome(key, res, nil, false, opts, start, 1500*time.Millisecond)
	want := schedulingv1alpha1.PreviewStatus{
		StartTime:            metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)),
		DurationMilliseconds: 1500,
		From:                 schedulingv1alpha1.PreviewRun{ConfigHash: "aaa", Unschedulable: 1, NodesUsed: 2},
		To:                   schedulingv1alpha1.PreviewRun{ConfigHash: "bbb", Unschedulable: 3, NodesUsed: 1},
		Pods:                 4,
		Moved:                3,
		NewlyUnschedulable: []schedulingv1alpha1.PreviewPod{
			{Pod: "ns/a", Reason: "r"}, {Pod: "ns/b", Reason: "r"}, {Pod: "ns/c", Reason: "r"},
		},
		Incomplete: "the first 4 of the profile's 6 pods in queue order were simulated (--preview-max-pods 4)",
	}
	if diff := cmp.Diff(want, o.status); diff != "" || !o.decided || o.added != 2 {
		t.Errorf("decided %t, added %d, want true, 2; status (-want +got):\n%s", o.decided, o.added, diff)
	}
	// The status reads back from the apiserver as it was written: a pass that finds it there
	// writes nothing.
	data, err := json.Marshal(o.status)
	if err != nil {
		t.Fatal(err)
	}
	var read schedulingv1alpha1.PreviewStatus
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(o.status, read) {
		t.Errorf("status.preview changes in a round trip through JSON: %+v, read back %+v", o.status, read)
	}
}

// TestNewPreviewOutcomeUndecided: a preview that a budget cut short, or that failed, decides
// nothing; its status says which budget ran out, with its flag, and so does its event.
func TestNewPreviewOutcomeUndecided(t *testing.T) {
	key := Key{From: "aaa", To: "bbb"}
	opts := Options{}.withDefaults()
	stopped := func(running, next simulate.RevisionOutcome) *simulate.ProfilePreview {
		return &simulate.ProfilePreview{Total: 4, Preview: &simulate.Preview{Pods: 2, Running: &running, New: next}}
	}
	const (
		wallStop = "the simulation stopped at its wall-clock time limit of 1m0s, with 2 of 4 pods decided: the other 2 were not simulated"
		cpuStop  = "the simulation stopped at its CPU time limit of 1m0s, with 0 of 4 pods decided: the other 4 were not simulated"
	)
	tests := []struct {
		name      string
		res       *simulate.ProfilePreview
		err       error
		timedOut  bool
		wantSpent string
		// wantIncomplete and wantFailure are status.preview's; wantSummary begins the event's note.
		wantIncomplete, wantFailure, wantSummary string
	}{
		{
			name: "past --preview-timeout", timedOut: true, wantSpent: timeoutFlag,
			wantIncomplete: "the preview ran out of its time budget of 5m0s (--preview-timeout); nothing was decided",
			wantSummary:    "The preview of configuration bbb is incomplete: the preview ran out of its time budget of 5m0s",
		},
		{
			name: "a simulation at its wall-clock limit", res: stopped(simulate.RevisionOutcome{}, simulate.RevisionOutcome{Stopped: wallStop}), wantSpent: timeoutFlag,
			wantIncomplete: "the preview ran out of its time budget (--preview-timeout); nothing was decided: " + wallStop,
			wantSummary:    "The preview of configuration bbb is incomplete: the preview ran out of its time budget (--preview-timeout)",
		},
		{
			name:           "the CPU time budget spent by the running configuration's simulation",
			res:            stopped(simulate.RevisionOutcome{Stopped: cpuStop, StoppedByCPU: true}, simulate.RevisionOutcome{Stopped: cpuStop, StoppedByCPU: true}),
			wantSpent:      cpuLimitFlag,
			wantIncomplete: "the preview ran out of its CPU time budget of 1m0s (--preview-cpu-limit) for its simulations; nothing was decided: " + cpuStop,
			wantSummary:    "The preview of configuration bbb is incomplete: the preview ran out of its CPU time budget of 1m0s (--preview-cpu-limit)",
		},
		{
			name: "the worker past --preview-memory-limit", wantSpent: memoryLimitFlag,
			err:            &previewBudgetError{flag: memoryLimitFlag, incomplete: outOfMemory + " of 512Mi (--preview-memory-limit); nothing was decided"},
			wantIncomplete: "the preview ran out of its memory budget of 512Mi (--preview-memory-limit); nothing was decided",
			wantSummary:    "The preview of configuration bbb is incomplete: the preview ran out of its memory budget of 512Mi (--preview-memory-limit)",
		},
		{
			name: "a cluster past --preview-max-objects", wantSpent: maxObjectsFlag,
			err:            &previewBudgetError{flag: maxObjectsFlag, incomplete: outOfObjects + " of 10000 objects (--preview-max-objects): the cluster has more of the kinds scheduling reads; nothing was decided"},
			wantIncomplete: "the preview ran out of its object budget of 10000 objects (--preview-max-objects): the cluster has more of the kinds scheduling reads; nothing was decided",
			wantSummary:    "The preview of configuration bbb is incomplete: the preview ran out of its object budget of 10000 objects",
		},
		{
			name: "failed", err: errors.New("listing Nodes: forbidden"),
			wantFailure: "listing Nodes: forbidden", wantSummary: "The preview of configuration bbb failed: listing Nodes: forbidden",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOutcome(key, tt.res, tt.err, tt.timedOut, opts, time.Now(), time.Second)
			if o.decided || o.spent != tt.wantSpent || o.status.Incomplete != tt.wantIncomplete || o.status.Failure != tt.wantFailure {
				t.Errorf("decided %t, spent %q, incomplete %q, failure %q; want undecided, spent %q, incomplete %q, failure %q",
					o.decided, o.spent, o.status.Incomplete, o.status.Failure, tt.wantSpent, tt.wantIncomplete, tt.wantFailure)
			}
			if got := Summary(o.status); !strings.HasPrefix(got, tt.wantSummary) {
				t.Errorf("event %q, want it to begin %q", got, tt.wantSummary)
			}
		})
	}
}

func TestDecidePreview(t *testing.T) {
	decided := func(added int, from string) *outcome {
		return &outcome{decided: true, added: added, status: schedulingv1alpha1.PreviewStatus{
			Pods: 5, From: schedulingv1alpha1.PreviewRun{ConfigHash: from},
			NewlyUnschedulable: []schedulingv1alpha1.PreviewPod{{Pod: "ns/a", Reason: "0/3 nodes are available: 3 node(s) are outside the scheduler's node pool."}},
		}}
	}
	guard := func(limit *int32) schedulingv1alpha1.PreviewSettings {
		return schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewGuard, MaxNewlyUnschedulable: limit}
	}
	tests := []struct {
		name       string
		settings   schedulingv1alpha1.PreviewSettings
		outcome    *outcome
		wantReason string
		wantIn     []string
	}{
		{name: "default mode is Report: never held", outcome: decided(5, "aaa")},
		{name: "Report while the preview runs", settings: schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewReport}},
		{name: "Off", settings: schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewOff}, outcome: decided(5, "aaa")},
		{name: "Guard waits for the preview", settings: guard(nil), wantReason: schedulingv1alpha1.ReasonPreviewRunning},
		{name: "Guard rolls a change that strands nothing", settings: guard(nil), outcome: decided(0, "aaa")},
		{name: "Guard rolls a change that leaves fewer unschedulable", settings: guard(nil), outcome: decided(-2, "aaa")},
		{
			name: "Guard refuses one more than allowed", settings: guard(nil), outcome: decided(1, "aaa"),
			wantReason: schedulingv1alpha1.ReasonPreviewRefused,
			wantIn:     []string{"1 more of the profile's 5 pods", "than the running configuration", "maxNewlyUnschedulable 0", "ns/a (0/3 nodes are available: 3 node(s) are outside the scheduler's node pool.)"},
		},
		{name: "Guard allows up to maxNewlyUnschedulable", settings: guard(ptr.To[int32](2)), outcome: decided(2, "aaa")},
		{
			name: "a new profile is guarded on its own count", settings: guard(ptr.To[int32](2)), outcome: decided(3, ""),
			wantReason: schedulingv1alpha1.ReasonPreviewRefused, wantIn: []string{"while no scheduler runs them", "maxNewlyUnschedulable 2"},
		},
		{
			name: "Guard refuses what the preview could not decide in time", settings: guard(nil),
			outcome:    &outcome{spent: timeoutFlag, status: schedulingv1alpha1.PreviewStatus{Incomplete: outOfTime + " of 2m0s (--preview-timeout); nothing was decided"}},
			wantReason: schedulingv1alpha1.ReasonPreviewRefused, wantIn: []string{outOfTime, "set spec.rollout.preview.mode to Report to roll it out, or have the operator's --preview-timeout raised"},
		},
		{
			name: "Guard refuses what the preview could not decide within its CPU time", settings: guard(nil),
			outcome: &outcome{spent: cpuLimitFlag, status: schedulingv1alpha1.PreviewStatus{
				Incomplete: outOfCPU + " of 1m0s (--preview-cpu-limit) for its simulations; nothing was decided: the simulation stopped",
			}},
			wantReason: schedulingv1alpha1.ReasonPreviewRefused,
			wantIn:     []string{outOfCPU + " of 1m0s (--preview-cpu-limit)", "set spec.rollout.preview.mode to Report to roll it out, or have the operator's --preview-cpu-limit raised"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := decide(tt.settings, tt.outcome)
			if g.Reason != tt.wantReason {
				t.Fatalf("reason %q, want %q (message %q)", g.Reason, tt.wantReason, g.Message)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(g.Message, s) {
					t.Errorf("message %q does not say %q", g.Message, s)
				}
			}
		})
	}
}

// TestPreviewerSupersedes: a newer change of a profile replaces its waiting preview, one
// preview runs at a time, and a finished one is not run again.
func TestPreviewerSupersedes(t *testing.T) {
	pv := New(nil, Options{})
	req := func(name, to string) Request {
		return Request{Name: name, Key: Key{UID: types.UID("u-" + name), To: to}}
	}
	pv.request(req("a", "1"))
	pv.request(req("b", "1"))
	pv.request(req("a", "2"))
	got, runCtx, ok := pv.next(context.Background())
	if !ok || got.Key.To != "2" || got.Name != "a" {
		t.Fatalf("first preview %+v, want a's newer change 2", got)
	}
	// While a's preview runs, a newer change cancels it.
	pv.request(req("a", "3"))
	select {
	case <-runCtx.Done():
	case <-time.After(time.Second):
		t.Fatal("the running preview of a was not cancelled by a's newer change")
	}
	pv.finish(got, nil, false)
	if o := pv.outcome(got.Key, "a"); o != nil {
		t.Errorf("a cancelled preview left an outcome: %+v", o)
	}
	next, _, _ := pv.next(context.Background())
	if next.Name != "b" {
		t.Errorf("second preview %+v, want b's", next)
	}
	pv.finish(next, &outcome{decided: true}, true)
	pv.request(req("b", "1"))
	if third, _, _ := pv.next(context.Background()); third.Name != "a" || third.Key.To != "3" {
		t.Errorf("third preview %+v, want a's change 3 (b's finished is not run again)", third)
	}
}

// TestPreviewerRetriesAFailure: a failed preview is kept, and Guard refuses on it, until the
// retry delay has passed; then the same change is previewed again. A preview that succeeded
// is not.
func TestPreviewerRetriesAFailure(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pv := New(nil, Options{})
	pv.now = func() time.Time { return now }
	req := Request{Name: "a", Key: Key{UID: "u", To: "1"}}
	pv.request(req)
	got, _, _ := pv.next(context.Background())
	pv.finish(got, &outcome{status: schedulingv1alpha1.PreviewStatus{Failure: "listing Nodes: connection refused"}}, true)
	o := pv.outcome(req.Key, "a")
	if o == nil || o.retryDue(now) {
		t.Fatalf("outcome %+v: want the failure kept, not yet due for a retry", o)
	}
	if g := decide(schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewGuard}, o); g.Reason != schedulingv1alpha1.ReasonPreviewRefused || !strings.Contains(g.Message, "connection refused") {
		t.Errorf("Guard on a failed preview: %+v", g)
	}
	pv.request(req)
	if _, _, ok := pv.next(context.Background()); ok {
		t.Fatal("the failed preview ran again before its retry delay")
	}
	now = now.Add(previewRetry)
	pv.request(req)
	again, _, ok := pv.next(context.Background())
	if !ok || again.Key != req.Key {
		t.Fatalf("after the retry delay the preview did not run again: %+v, %t", again, ok)
	}
	pv.finish(again, &outcome{decided: true}, true)
	now = now.Add(10 * previewRetry)
	pv.request(req)
	if _, _, ok := pv.next(context.Background()); ok {
		t.Error("a preview that succeeded ran again")
	}
}

// TestPreviewerRefreshesAHeldChange: an outcome that holds a change (it leaves more pods
// unschedulable) is previewed again once the cluster changed and the refresh interval has
// passed since it finished, not before; without a change of the cluster, after ten intervals.
// An outcome that lets its change through is not previewed again. On main before outcomes were
// refreshed, a refused change stayed refused for good, whatever nodes came.
func TestPreviewerRefreshesAHeldChange(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pv := New(nil, Options{RefreshInterval: time.Minute})
	pv.now = func() time.Time { return now }
	refused := Request{Name: "a", Key: Key{UID: "ua", To: "1"}}
	passed := Request{Name: "b", Key: Key{UID: "ub", To: "1"}}
	run := func(req Request, o *outcome) {
		t.Helper()
		pv.request(req)
		got, _, ok := pv.next(context.Background())
		if !ok || got.Name != req.Name {
			t.Fatalf("preview %+v, %t: want %s's", got, ok, req.Name)
		}
		pv.finish(got, o, true)
	}
	previewedAgain := func() []string {
		var names []string
		for _, req := range []Request{refused, passed} {
			pv.request(req)
		}
		for {
			got, _, ok := pv.next(context.Background())
			if !ok {
				return names
			}
			names = append(names, got.Name)
			pv.finish(got, pv.latest[got.Name], true)
		}
	}
	run(refused, &outcome{decided: true, added: 3})
	run(passed, &outcome{decided: true})

	now = now.Add(2 * time.Minute)
	if got := previewedAgain(); len(got) != 0 {
		t.Errorf("previewed again without a change of the cluster: %v", got)
	}
	finished := now
	pv.latest["a"].finished = finished
	now = finished.Add(30 * time.Second)
	pv.ClusterChanged()
	if got := previewedAgain(); len(got) != 0 {
		t.Errorf("previewed again within the interval after a change: %v", got)
	}
	now = finished.Add(time.Minute)
	if diff := cmp.Diff([]string{"a"}, previewedAgain()); diff != "" {
		t.Errorf("previewed again once the interval passed after a change (-want +got):\n%s", diff)
	}
	now = pv.latest["a"].finished.Add(9 * time.Minute)
	if got := previewedAgain(); len(got) != 0 {
		t.Errorf("previewed again before the timer without a change: %v", got)
	}
	now = pv.latest["a"].finished.Add(10 * time.Minute)
	if diff := cmp.Diff([]string{"a"}, previewedAgain()); diff != "" {
		t.Errorf("previewed again on the timer (-want +got):\n%s", diff)
	}
}
