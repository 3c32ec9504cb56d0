package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

// TestSimulateCLIInput: the snapshot holds the nodes and the pending pods of the profile's
// scheduler name, which `manager simulate` takes as its workload.
func TestSimulateCLIInput(t *testing.T) {
	in, err := writeSimulateCLIInput(t.TempDir(), 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in.snapshot)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	objs, err := simulate.ReadObjects(f)
	if err != nil {
		t.Fatal(err)
	}
	c := &simulate.Cluster{Objects: objs}
	if nodes, pods := len(c.Nodes()), len(c.PendingPods([]string{pluginsProfile().Name})); nodes != 3 || pods != 5 {
		t.Errorf("the snapshot has %d nodes and %d pending pods of %s, want 3 and 5", nodes, pods, pluginsProfile().Name)
	}
	if info, err := f.Stat(); err != nil || int(info.Size()) != in.snapshotBytes {
		t.Errorf("the snapshot has %v bytes (%v), want the %d written", info.Size(), err, in.snapshotBytes)
	}
}

// TestRunManagerSimulate runs a stand-in for the manager that prints a report's summary: a run
// is measured when it bound every pod, and fails otherwise.
func TestRunManagerSimulate(t *testing.T) {
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager")
	script := "#!/bin/sh\necho 'sim-00000  node-0001'\necho\necho 'Profile bench-plugins: 5 bound, 0 unschedulable, 3 of 3 nodes used'\n"
	if err := os.WriteFile(manager, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	in := simulateCLIInput{profile: "profile.yaml", snapshot: "snapshot.yaml"}
	r, err := runManagerSimulate(t.Context(), manager, in, filepath.Join(dir, "report.txt"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if r.Wall <= 0 || r.MaxRSS <= 0 {
		t.Errorf("run %+v, want its time and peak memory", r)
	}
	if _, err := runManagerSimulate(t.Context(), manager, in, filepath.Join(dir, "report.txt"), 6); err == nil || !strings.Contains(err.Error(), "bound 5 of 6 pods") {
		t.Errorf("5 of 6 pods bound: error %v, want it to say so", err)
	}
}

// TestSimulateCLIRowsGoal: the goal of 60 s is judged on the median run.
func TestSimulateCLIRowsGoal(t *testing.T) {
	o := options{simulateCLINodes: 5000, simulateCLIPods: 50000}
	for wall, want := range map[time.Duration]string{50 * time.Second: "goal ≤ 60.00: met", 70 * time.Second: "goal ≤ 60.00: NOT met"} {
		rows := simulateCLIRows(o, simulateCLIInput{snapshotBytes: 40e6}, []simulateCLIResult{{Wall: wall, MaxRSS: 1 << 30, Load: 1}})
		if note := rows[0].Note; !strings.HasPrefix(note, want) || !strings.Contains(note, "snapshot of 40 MB") {
			t.Errorf("%s: note %q, want %q and the snapshot's size", wall, note, want)
		}
		if got := rows[2].Value.Median; got != 1024 {
			t.Errorf("peak memory %v MiB, want 1024", got)
		}
	}
}
