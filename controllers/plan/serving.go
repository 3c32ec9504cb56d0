package plan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// ServedNames tells which profiles a scheduler serves each scheduler name for right now: by
// scheduler name, the names of the profiles whose entry some live scheduler runs. A name is
// served while a scheduler pod that mounts a configuration with it exists (terminating or not),
// or a scheduler Deployment with replicas runs a template with it, so a name is held from the
// moment its Deployment is applied until the last pod of its old revision is gone.
type ServedNames map[string][]string

// Add records that the profile's entry with the scheduler name is served.
func (s ServedNames) Add(schedulerName, profileName string) {
	if !slices.Contains(s[schedulerName], profileName) {
		s[schedulerName] = append(s[schedulerName], profileName)
		sort.Strings(s[schedulerName])
	}
}

// NameOwner returns the profile that keeps the scheduler name when p asks for it, or "" when p
// may have it. Whoever serves the name now keeps it until it stops serving it, even when it no
// longer asks for it (a rename rolls out first) or is being deleted (its pods are still there);
// when nobody serves it, the oldest profile that asks for it gets it. served says whether the
// owner serves the name (for the message).
func NameOwner(p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, name string, index ServedNames) (owner string, served bool) {
	servers := index[name]
	if ref := p.Spec.SchedulerRef.Name; ref != "" {
		// An older revision of the member's own Scheduler: one process, one leader at a time.
		servers = slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return s == SchedulerHolder(ref) })
	}
	switch {
	case len(servers) == 0:
	case !slices.Contains(servers, p.Name):
		return oldestOf(servers, all), true
	case len(servers) == 1:
		return "", false
	default:
		// Several profiles serve the name, which the operator never lets happen but a cluster
		// from before this rule may have: the oldest of them keeps it.
		if owner := oldestOf(servers, all); owner != p.Name {
			return owner, true
		}
		return "", false
	}
	claimants := []*schedulingv1alpha1.SchedulerProfile{p}
	for i := range all {
		other := &all[i]
		if other.Name != p.Name && other.DeletionTimestamp == nil && profile.SchedulerName(other) == name {
			claimants = append(claimants, other)
		}
	}
	oldest := slices.MinFunc(claimants, ByAge)
	if oldest.Name == p.Name {
		return "", false
	}
	return oldest.Name, false
}

// oldestOf is the oldest of the named profiles; a name of no stored profile (its profile is
// gone, its pods not yet) counts as the oldest, since it serves and nobody else can stop it.
func oldestOf(names []string, all []schedulingv1alpha1.SchedulerProfile) string {
	var stored []*schedulingv1alpha1.SchedulerProfile
	for _, n := range names {
		i := slices.IndexFunc(all, func(p schedulingv1alpha1.SchedulerProfile) bool { return p.Name == n })
		if i < 0 {
			return n
		}
		stored = append(stored, &all[i])
	}
	return slices.MinFunc(stored, ByAge).Name
}

// SchedulerHolderPrefix starts the holder of a scheduler name in servedNames that is a
// Scheduler's older revision rather than a profile; "/" is in no profile's name.
const SchedulerHolderPrefix = "Scheduler/"

// SchedulerHolder is the holder of the names that a running revision of Scheduler s serves for
// profiles its status no longer lists.
func SchedulerHolder(s string) string { return SchedulerHolderPrefix + s }

// NameConflictMessage says why a profile does not get its scheduler name.
func NameConflictMessage(name, owner string, served bool) string {
	if s, ok := strings.CutPrefix(owner, SchedulerHolderPrefix); ok {
		return fmt.Sprintf("schedulerName %q is served by a running revision of Scheduler %q, which keeps it until its pods that serve it are gone", name, s)
	}
	if served {
		return fmt.Sprintf("schedulerName %q is served by the scheduler of SchedulerProfile %q, which keeps it until it stops serving it", name, owner)
	}
	return fmt.Sprintf("schedulerName %q is already claimed by the older SchedulerProfile %q", name, owner)
}

// maxConfigNames bounds the memo of configurations' scheduler names (namesIn), which is emptied
// when it reaches it: a few ConfigMaps per profile are kept, 3 at most.
const maxConfigNames = 8192

// ServedNamesIndex reads which profile serves which scheduler name: the scheduler Deployments
// with replicas and the scheduler pods of the operator's namespace, and the configurations they
// mount. A Scheduler's names are attributed to its members by its status.
func (r *Planner) ServedNamesIndex(ctx context.Context) (ServedNames, error) {
	return r.ServedNamesOf(ctx, nil)
}

// ServedNamesOf is ServedNamesIndex for the scheduler names in names, or for every name when
// names is nil: through the cache's indexes, it reads only the ConfigMaps that hold one of them
// and the Deployments and pods that mount those, so that its cost does not grow with the number
// of schedulers. The index it returns may hold other names, which only the mounts read serve.
func (r *Planner) ServedNamesOf(ctx context.Context, names []string) (ServedNames, error) {
	reader := r.Reader
	var mounts []SchedulerMount
	if names == nil {
		var err error
		if mounts, err = r.mountsOf(ctx, nil); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, name := range names {
		var cms corev1.ConfigMapList
		if err := reader.List(ctx, &cms, client.InNamespace(r.Settings.Namespace), client.MatchingFields{IndexSchedulerNames: name},
			client.UnsafeDisableDeepCopy); err != nil { // only read
			return nil, fmt.Errorf("listing the configurations of scheduler name %s: %w", name, err)
		}
		for i := range cms.Items {
			if cm := cms.Items[i].Name; !seen[cm] {
				seen[cm] = true
				m, err := r.mountsOf(ctx, client.MatchingFields{IndexMounts: cm})
				if err != nil {
					return nil, err
				}
				mounts = append(mounts, m...)
			}
		}
	}
	return r.attribute(ctx, mounts)
}

// attribute reads which profile each mount serves each scheduler name for. A Scheduler's names
// are attributed to its members by its status.
func (r *Planner) attribute(ctx context.Context, mounts []SchedulerMount) (ServedNames, error) {
	reader := r.Reader
	index := ServedNames{}
	members := map[string]map[string]string{} // Scheduler -> scheduler name -> profile
	for _, m := range mounts {
		if m.ConfigMap == "" {
			continue
		}
		names, err := r.NamesIn(ctx, reader, m.ConfigMap)
		if err != nil {
			return nil, err
		}
		if p := m.Labels[schedulingv1alpha1.LabelProfile]; p != "" {
			for _, n := range names {
				index.Add(n, p)
			}
			continue
		}
		s := m.Labels[schedulingv1alpha1.LabelScheduler]
		if s == "" {
			continue
		}
		if _, ok := members[s]; !ok {
			if members[s], err = servedMembers(ctx, reader, s); err != nil {
				return nil, err
			}
		}
		for _, n := range names {
			if p, ok := members[s][n]; ok {
				index.Add(n, p)
			} else {
				// A revision of the Scheduler that still runs serves an entry its status no
				// longer lists (a member that left, or was renamed): the Scheduler holds the name
				// until those pods are gone.
				index.Add(n, SchedulerHolder(s))
			}
		}
	}
	return index, nil
}

// mountsOf reads the configurations mounted by the scheduler Deployments with replicas and the
// scheduler pods of the operator's namespace that match (all of them for nil).
func (r *Planner) mountsOf(ctx context.Context, match client.ListOption) ([]SchedulerMount, error) {
	opts := []client.ListOption{client.InNamespace(r.Settings.Namespace), client.MatchingLabels{LabelName: "kube-scheduler", LabelManagedBy: schedulingv1alpha1.FieldManager},
		client.UnsafeDisableDeepCopy} // only read: the cache's own objects spare a copy of every Deployment and pod per pass
	if match != nil {
		opts = append(opts, match)
	}
	var deployments appsv1.DeploymentList
	if err := r.Reader.List(ctx, &deployments, opts...); err != nil {
		return nil, fmt.Errorf("listing scheduler Deployments: %w", err)
	}
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, opts...); err != nil {
		return nil, fmt.Errorf("listing scheduler pods: %w", err)
	}
	var mounts []SchedulerMount
	for i := range deployments.Items {
		if d := &deployments.Items[i]; Replicas(d.Spec.Replicas) > 0 {
			mounts = append(mounts, SchedulerMount{Labels: d.Labels, ConfigMap: ConfigMapOf(&d.Spec.Template.Spec)})
		}
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			mounts = append(mounts, SchedulerMount{Labels: p.Labels, ConfigMap: ConfigMapOf(&p.Spec)})
		}
	}
	return mounts, nil
}

// RunningNames is the one definition of the scheduler names that are served now, by the
// profile each is served for: those of the configuration of a scheduler pod of the operator's
// namespace, among those that match (every one for nil), that is running, ready and not being
// deleted. Unlike servedNamesIndex, which holds a name from the moment its Deployment is applied
// until its last pod is gone, it holds only what schedules pods now. It is the status's
// servedSchedulerName, which namespace assignment (its policies' params, stranded pods) reads.
func (r *Planner) RunningNames(ctx context.Context, match client.ListOption) (ServedNames, error) {
	mounts, err := ServingMounts(ctx, r.Reader, r.Settings.Namespace, match)
	if err != nil {
		return nil, err
	}
	return r.attribute(ctx, mounts)
}

// ServedNameOf is the scheduler name that index serves for a profile; "" when none. A profile is
// served under one name at a time (NameOwner); should a rollout overlap two, the one it asks for wins.
func ServedNameOf(index ServedNames, profileName, asked string) string {
	found := ""
	for _, name := range sortedKeys(index) {
		if slices.Contains(index[name], profileName) {
			if name == asked {
				return name
			}
			if found == "" {
				found = name
			}
		}
	}
	return found
}

// servedMembers maps the scheduler names a Scheduler serves to its member profiles, from its status.
func servedMembers(ctx context.Context, reader client.Reader, name string) (map[string]string, error) {
	s := &schedulingv1alpha1.Scheduler{}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Scheduler %s: %w", name, err)
	}
	out := map[string]string{}
	for _, m := range s.Status.Profiles {
		out[m.SchedulerName] = m.Name
	}
	return out, nil
}

// NamesIn are the scheduler names of the configuration in a ConfigMap of the operator's
// namespace; none when it is gone (a pod that mounts a missing ConfigMap does not start).
func (r *Planner) NamesIn(ctx context.Context, reader client.Reader, name string) ([]string, error) {
	key := client.ObjectKey{Namespace: r.Settings.Namespace, Name: name}
	names, ok := r.Cache().configNames.get(key.String())
	if ok {
		return names, nil
	}
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ConfigMap %s: %w", name, err)
	}
	// One configuration is parsed once (ProfilesIn).
	profiles, err := r.Cache().ProfilesIn(cm)
	if err != nil {
		return nil, err
	}
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	r.Cache().configNames.put(key.String(), names)
	return names, nil
}

// NameTakenBack says why the process may not return to an earlier pod template, "" when it may:
// the template's configuration has a scheduler name that another owner serves now (a member
// that left the Scheduler, whose name a profile took once the old pods were gone), and two
// schedulers must never serve one name.
func (r *Planner) NameTakenBack(ctx context.Context, proc *Process, t *corev1.PodTemplateSpec) (string, error) {
	cm := ConfigMapOf(&t.Spec)
	if cm == "" {
		return "", nil
	}
	names, err := r.NamesIn(ctx, r.Reader, cm)
	if err != nil || len(names) == 0 {
		return "", err
	}
	served, err := r.ServedNamesOf(ctx, names)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		for _, server := range served[n] {
			if !holdsFor(proc, server) {
				return fmt.Sprintf("returning to it would serve schedulerName %q, which %s serves now", n, holderName(server)), nil
			}
		}
	}
	return "", nil
}

// holdsFor tells whether the holder of a served name (servedNames) is the process itself: the
// profile with its own scheduler, or the Scheduler, its older revisions and the members its
// status lists.
func holdsFor(proc *Process, holder string) bool {
	if s, ok := proc.Owner.(*schedulingv1alpha1.Scheduler); ok {
		return holder == SchedulerHolder(s.Name) ||
			slices.ContainsFunc(s.Status.Profiles, func(m schedulingv1alpha1.SchedulerMember) bool { return m.Name == holder })
	}
	return holder == proc.Owner.GetName()
}

// holderName names the holder of a served name for a message.
func holderName(holder string) string {
	if s, ok := strings.CutPrefix(holder, SchedulerHolderPrefix); ok {
		return "Scheduler " + strconv.Quote(s)
	}
	return "SchedulerProfile " + strconv.Quote(holder)
}
