package manager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The operator's memory limit: the Go runtime's garbage collector aims to keep the operator
// under its container's memory limit less what its preview worker may take, so that the two
// together stay in the container.

// noCgroupLimit is the least value of a cgroup v1 memory limit that means none: v1 writes the
// largest page-aligned int64 for an unset limit.
const noCgroupLimit = 1 << 62

// operatorMemoryShare is the share of what the container leaves the operator that its garbage
// collector aims at: the rest is for what the Go runtime does not count (stacks returned late,
// fragmentation, the executable).
const operatorMemoryShare = 0.9

// setMemoryLimit sets the operator's soft memory limit from its container's (operatorMemoryLimit)
// unless GOMEMLIMIT is set, and returns it; 0 when none was set.
func setMemoryLimit(previewBudget int64) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	container, err := cgroupMemoryLimit(os.ReadFile)
	if err != nil {
		return 0
	}
	limit := operatorMemoryLimit(container, previewBudget)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return limit
}

// cgroupMemoryLimit reads the container's memory limit, in bytes, with read; 0 for none.
func cgroupMemoryLimit(read func(string) ([]byte, error)) (int64, error) {
	// cgroup v2, then v1.
	for _, file := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := read(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("reading the container's memory limit: %w", err)
		}
		v := strings.TrimSpace(string(data))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the container's memory limit from %s: %w", file, err)
		}
		if n >= noCgroupLimit {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// operatorMemoryLimit is the soft memory limit of the operator in a container of container bytes
// (0: no limit) whose preview worker may take previewBudget: operatorMemoryShare of what the
// worker leaves. 0 is none: no container limit, or nothing left.
func operatorMemoryLimit(container, previewBudget int64) int64 {
	left := container - previewBudget
	if container <= 0 || left <= 0 {
		return 0
	}
	return int64(float64(left) * operatorMemoryShare)
}

// quantityFlag is a flag of bytes written as a quantity: 256Mi, 1G.
type quantityFlag struct{ bytes *int64 }

func (q quantityFlag) String() string {
	if q.bytes == nil {
		return ""
	}
	return resource.NewQuantity(*q.bytes, resource.BinarySI).String()
}

func (q quantityFlag) Set(v string) error {
	n, err := resource.ParseQuantity(v)
	if err != nil {
		return err
	}
	*q.bytes = n.Value()
	return nil
}
