// Package plan is the read-only planning of a scheduler process that the reconcilers, the
// admission reviews and the manager's render and simulate commands share: what the cluster admin
// allows a profile or a Scheduler to ask of its scheduler pods (SchedulerPodCaps), the refusals of
// an owner's own settings, a process and the names of its objects (Process), what a Scheduler
// adds around its profiles in its rendered configuration, and, through a Planner that reads the
// cluster, the checks of a profile with a scheduler of its own, the plan of a Scheduler and its
// members, the previews that hold a member's change, the scheduler names served now and the
// extenders' Secrets. Its memos are one object (Memos) built once and handed in. It writes
// nothing and imports neither the reconcilers nor the write side.
package plan
