//go:build unix

package simulate

import (
	"fmt"
	"syscall"
	"time"
)

// processCPU is the CPU time, user and system, that every thread of this process has used so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("reading the CPU time of the process: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
