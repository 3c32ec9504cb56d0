package controllers

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
)

// DefaultMaxConcurrentReconciles is how many passes each controller runs at once: the operator
// runs with a CPU or two, and a pass spends much of its time waiting for the apiserver, so two
// keep the CPU busy while one profile's rollback no longer waits behind another's pass.
const DefaultMaxConcurrentReconciles = 2

// upgradeMu serializes the passes that may move a scheduler to the operator's new image: the
// wave counts the schedulers in flight (planUpgrade) before it applies, and two passes at once
// would each see the same free slot. Other passes run in parallel: a profile is never in two
// passes at once (the controller's queue), each pass reads what it decides from the cluster, and
// the shared memos are safe for concurrent use.
var upgradeMu sync.Mutex

// lockUpgrade takes upgradeMu when the live Deployment runs another scheduler image than the
// operator's, or a lease of an operator version before the prefix, and returns what releases it.
func (r *processObjects) lockUpgrade(d *appsv1.Deployment) (unlock func()) {
	if d == nil || r.upgraded(d) {
		return func() {}
	}
	upgradeMu.Lock()
	return upgradeMu.Unlock
}

// workersOr is n, or DefaultMaxConcurrentReconciles when n is not positive.
func workersOr(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxConcurrentReconciles
}
