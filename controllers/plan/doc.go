// Package plan is the read-only planning of a scheduler process that the reconcilers, the
// admission reviews and the manager's render and simulate commands share: what the cluster admin
// allows a profile or a Scheduler to ask of its scheduler pods (SchedulerPodCaps), the refusals of
// an owner's own settings, and what a Scheduler adds around its profiles in its rendered
// configuration. It writes nothing and imports neither the reconcilers nor the write side.
package plan
