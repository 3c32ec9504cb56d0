//go:build linux

package preview

import (
	"os"
	"syscall"
)

// workerSysProcAttr has the kernel kill a preview worker whose operator has died: nobody would
// read its result, and its memory is the node's.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// peakResidentMemory is the largest resident memory of an ended process, in bytes (its
// ru_maxrss, which Linux counts in KiB); 0 when it is not known.
func peakResidentMemory(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) << 10 //nolint:unconvert // int32 on 32-bit Linux
	}
	return 0
}
