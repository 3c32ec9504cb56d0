package main

import (
	"os"
	"strings"
	"testing"
)

// TestContendersInTheOrderOfTheRatios: the ratios name contenders by index; each index must be
// the contender its name says.
func TestContendersInTheOrderOfTheRatios(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := contenders(options{scheduler: self, upstream: self, noopScheduler: self})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{ceiling: "apiserver ceiling", upstream: "upstream kube-scheduler", oursDefault: "ours, default profile",
		oursPlugins: "ours, NodePool + NodeLabelPreference", upstreamAffinity: "upstream, NodeAffinity", oursNoop: "ours, two no-op plugins"}
	if len(cs) != len(want) {
		t.Fatalf("%d contenders, want %d", len(cs), len(want))
	}
	for i, prefix := range want {
		if !strings.HasPrefix(cs[i].name, prefix) {
			t.Errorf("contender %d is %q, want %q...", i, cs[i].name, prefix)
		}
	}
}
