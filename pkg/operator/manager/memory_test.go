package manager

import (
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOperatorMemoryLimit(t *testing.T) {
	const mi = 1 << 20
	tests := []struct {
		name                     string
		container, previewBudget int64
		want                     int64
	}{
		{name: "no container limit", container: 0, previewBudget: 256 * mi, want: 0},
		{name: "768Mi less a 256Mi budget", container: 768 * mi, previewBudget: 256 * mi, want: 512 * mi * 9 / 10},
		{name: "512Mi less a 256Mi budget", container: 512 * mi, previewBudget: 256 * mi, want: 256 * mi * 9 / 10},
		{name: "the budget takes the whole container", container: 256 * mi, previewBudget: 256 * mi, want: 0},
		{name: "the budget is past the container's", container: 128 * mi, previewBudget: 256 * mi, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, operatorMemoryLimit(tt.container, tt.previewBudget)); diff != "" {
				t.Errorf("operatorMemoryLimit(%d, %d) (-want +got):\n%s", tt.container, tt.previewBudget, diff)
			}
		})
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    int64
		wantErr bool
	}{
		{name: "cgroup v2", files: map[string]string{"/sys/fs/cgroup/memory.max": "805306368\n"}, want: 805306368},
		{name: "cgroup v2 without a limit", files: map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, want: 0},
		{name: "cgroup v1", files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n"}, want: 536870912},
		{name: "cgroup v1 without a limit", files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, want: 0},
		{name: "no cgroup", files: map[string]string{}, want: 0},
		{name: "not a number", files: map[string]string{"/sys/fs/cgroup/memory.max": "lots\n"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if v, ok := tt.files[name]; ok {
					return []byte(v), nil
				}
				return nil, fs.ErrNotExist
			}
			got, err := cgroupMemoryLimit(read)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("limit (-want +got):\n%s", diff)
			}
		})
	}
}
