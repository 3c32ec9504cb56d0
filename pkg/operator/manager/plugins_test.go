package manager

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlugins(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runPlugins(nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		f := strings.Fields(l)
		lines[f[0]] = strings.Join(f[1:], " ")
	}
	for name, want := range map[string]string{
		"NodePool":            "out-of-tree PreFilter,Filter",
		"NodeLabelPreference": "out-of-tree PreScore,Score",
		"NodeResourcesFit":    "in-tree PreFilter,Filter,PreScore,Score,PlacementScore",
		"DefaultBinder":       "in-tree Bind",
		"PrioritySort":        "in-tree QueueSort",
	} {
		if lines[name] != want {
			t.Errorf("%s: %q, want %q", name, lines[name], want)
		}
	}
	if len(lines) < 20 {
		t.Errorf("%d plugins listed, want every in-tree plugin too:\n%s", len(lines), stdout.String())
	}
	if code := runPlugins([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("an unexpected argument gave exit code %d, want 2", code)
	}
}
