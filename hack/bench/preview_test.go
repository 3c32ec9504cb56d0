package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
)

// TestPreviewRowsGoals: the time goal is judged on the median time until status.preview showed
// the preview, and the memory goal, in MB, on the median of each round's peak less the idle
// operator's resident memory before the first change.
func TestPreviewRowsGoals(t *testing.T) {
	const idle = 100 << 20
	round := func(wall time.Duration, overMiB int64) previewResult {
		return previewResult{Wall: wall, Duration: wall / 2, CPU: wall, Before: idle + 10<<20, Peak: idle + overMiB<<20}
	}
	o := options{previewNodes: 1000, previewPods: 2000}
	for _, tc := range []struct {
		name             string
		results          []previewResult
		wantWall, wantMB string
	}{
		{"both met", []previewResult{round(3*time.Second, 200), round(4*time.Second, 250), round(9*time.Second, 400)}, "goal ≤ 5.00: met", "goal ≤ 300 MB (286.1 MiB): met"},
		// 290 MiB are 304 MB.
		{"neither met", []previewResult{round(6*time.Second, 290), round(6*time.Second, 290)}, "goal ≤ 5.00: NOT met", "goal ≤ 300 MB (286.1 MiB): NOT met"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := previewRows(o, idle, tc.results)
			if shown := row(t, rows, "a profile's change, 2000 pods on 1000 nodes"); !strings.HasPrefix(shown.Note, tc.wantWall) {
				t.Errorf("time note %q, want %q", shown.Note, tc.wantWall)
			}
			memory := row(t, rows, "  operator's peak resident memory over idle")
			if !strings.HasPrefix(memory.Note, tc.wantMB) || !strings.Contains(memory.Note, "(100.0 MiB); VmRSS before each change: 110.0") {
				t.Errorf("memory note %q, want %q, the idle operator's 100 MiB and 110 MiB before each change", memory.Note, tc.wantMB)
			}
		})
	}
}

// TestResetPeakMemory: after the reset, VmHWM is no longer the peak of memory released before.
func TestResetPeakMemory(t *testing.T) {
	func() {
		garbage := make([]byte, 64<<20)
		for i := range garbage {
			garbage[i] = 1
		}
		runtime.KeepAlive(garbage)
	}()
	debug.FreeOSMemory()
	before, err := cluster.ReadMemory("self")
	if err != nil {
		t.Fatal(err)
	}
	if err := resetPeakMemory(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	after, err := cluster.ReadMemory("self")
	if err != nil {
		t.Fatal(err)
	}
	if before.HWM-after.HWM < 32<<20 {
		t.Errorf("VmHWM %.1f MiB before the reset, %.1f MiB after: want the 64 MiB released before gone from the peak", cluster.MiB(before.HWM), cluster.MiB(after.HWM))
	}
}
