package core

import (
	appsv1 "k8s.io/api/apps/v1"
)

// DefaultMaxConcurrentReconciles is how many passes each controller runs at once: the operator
// runs with a CPU or two, and a pass spends much of its time waiting for the apiserver, so two
// keep the CPU busy while one profile's rollback no longer waits behind another's pass.
const DefaultMaxConcurrentReconciles = 2

// lockUpgrade takes r.upgradeMu when the live Deployment runs another scheduler image than the
// operator's, or a lease of an operator version before the prefix, and returns what releases it.
func (r *processObjects) lockUpgrade(d *appsv1.Deployment) (unlock func()) {
	if d == nil || r.upgraded(d) {
		return func() {}
	}
	if r.upgradeMu == nil {
		return func() {}
	}
	r.upgradeMu.Lock()
	return r.upgradeMu.Unlock
}

// workersOr is n, or DefaultMaxConcurrentReconciles when n is not positive.
func workersOr(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxConcurrentReconciles
}
