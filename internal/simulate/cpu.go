package simulate

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A CPU time limit counts the CPU time of the whole process, user and system, as the operating
// system reports it: the scheduler runs its framework's parallel steps, its informers and the
// garbage collector on goroutines of their own, so the time of the goroutine that drives the
// simulation would miss most of the work.

// cpuTick is how often the watcher of a CPU time limit samples the process's CPU time. A limit of
// less than ten ticks is sampled every tenth of it, at most every millisecond.
const cpuTick = 50 * time.Millisecond

// errCPULimit is the cause of a simulation's end at its CPU time limit.
var errCPULimit = errors.New("the simulation reached its CPU time limit")

// cpuWatch is the CPU time limit of a simulation. A goroutine samples the process's CPU time
// every tick, for the steps that take long (building the scheduler, a cycle on many nodes), and
// the simulation samples it before each scheduling cycle, so that a small limit stops it at the
// first cycle past it rather than at the next tick; whichever finds the limit spent cancels the
// simulation with errCPULimit. The simulation may go past the limit by what the process does
// until then. A nil *cpuWatch is no limit.
type cpuWatch struct {
	start, limit time.Duration
	cancel       context.CancelCauseFunc
	done         chan struct{}
	wg           sync.WaitGroup
}

// watchCPU starts the watch of limit from now, which cancels with cancel until its stop.
func watchCPU(cancel context.CancelCauseFunc, limit time.Duration) (*cpuWatch, error) {
	start, err := processCPU()
	if err != nil {
		return nil, err
	}
	w := &cpuWatch{start: start, limit: limit, cancel: cancel, done: make(chan struct{})}
	tick := min(cpuTick, max(limit/10, time.Millisecond))
	w.wg.Go(func() {
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-ticker.C:
				if w.check() {
					return
				}
			}
		}
	})
	return w, nil
}

// check cancels the simulation once the process has used the limit since the start, and tells
// whether it had. processCPU succeeded at the start if it succeeds at all: a sample that fails is
// not a spent limit.
func (w *cpuWatch) check() bool {
	if w == nil {
		return false
	}
	now, err := processCPU()
	if err != nil || now-w.start < w.limit {
		return false
	}
	w.cancel(errCPULimit)
	return true
}

// stop ends the watch and returns once its goroutine has ended.
func (w *cpuWatch) stop() {
	close(w.done)
	w.wg.Wait()
}
