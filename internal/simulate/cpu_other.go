//go:build !unix

package simulate

import (
	"errors"
	"time"
)

// processCPU fails: the process's CPU time comes from getrusage, which this platform lacks.
func processCPU() (time.Duration, error) {
	return 0, errors.New("a CPU time limit needs the CPU time of the process (getrusage), which this platform does not report")
}
