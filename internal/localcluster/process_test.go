package localcluster

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestCPUTime: the CPU time of this process grows while it computes, and by no more than the
// wall time it computed for on every CPU. It computes until 50 ms of CPU time are counted, for
// at most 10 s, so that a machine busy with other work slows it but does not fail it.
func TestCPUTime(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sum, grown := 0, time.Duration(0)
	for grown < 50*time.Millisecond && time.Since(start) < 10*time.Second {
		for range 1_000_000 {
			sum++
		}
		now, err := CPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		grown = now - before
	}
	wall := time.Since(start)
	if grown < 50*time.Millisecond {
		t.Errorf("%s of computing (%d loops) counted %s of CPU time, want at least 50 ms", wall, sum, grown)
	}
	// /proc counts in clock ticks: allow one tick per CPU beyond the wall time.
	if limit := time.Duration(runtime.NumCPU()) * (wall + 10*time.Millisecond); grown > limit {
		t.Errorf("%s of computing counted %s of CPU time, more than %s on every CPU", wall, grown, limit)
	}
}
