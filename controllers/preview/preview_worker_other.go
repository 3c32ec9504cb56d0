//go:build !linux

package preview

import (
	"os"
	"syscall"
)

// workerSysProcAttr is nothing outside Linux, which alone kills a child with its parent.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }

// peakResidentMemory is not known outside Linux.
func peakResidentMemory(*os.ProcessState) int64 { return 0 }
