// Package operator builds the scheduler-profile-operator's two binaries with a set of scheduler
// plugins of your own. Plugin describes one; scheduler.Run (package pkg/operator/scheduler) is
// the main function of the scheduler, upstream kube-scheduler with the plugins compiled in, and
// manager.Run (package pkg/operator/manager) that of the operator, which validates every
// SchedulerProfile against exactly those plugins before the scheduler runs it. Both take the same
// plugins, so what the operator accepts is what the scheduler runs. They are two packages so that
// neither binary links the other's dependencies (the scheduler no controller-runtime, the
// manager no kube-scheduler command).
//
// This package is the supported Go API of the project; the other packages may change in any
// release. The operator's own binaries are these two calls with StockPlugins. A plugin module
// builds against the Kubernetes version of this module (its go.mod pins the same k8s.io/kubernetes
// and replaces the same staging modules) and moves with it.
//
// A plugin is what kube-scheduler's out-of-tree registry takes (a name and a factory), plus a
// zero value of its type, from which `manager plugins` and multiPoint read its extension points,
// and, for a plugin with args, the function that registers its args types. See
// docs/tasks/write-your-own-plugin.md in the repository for a whole module.
package operator
