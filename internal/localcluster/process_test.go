package localcluster

import (
	"os"
	"testing"
	"time"
)

// TestCPUTime: the CPU time of this process grows while it computes.
func TestCPUTime(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		sum++
	}
	after, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 50*time.Millisecond {
		t.Errorf("100 ms of computing (%d loops) took %s of CPU time, want at least 50 ms", sum, after-before)
	}
}
