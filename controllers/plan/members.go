package plan

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/schedops/scheduler-profile-operator/controllers/preview"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Member is what a shared scheduler makes of one of its profiles.
type Member struct {
	Profile       *schedulingv1alpha1.SchedulerProfile
	SchedulerName string
	// ConflictWith is the profile that keeps the scheduler name, and ConflictServed says
	// whether it keeps it because it serves it (else it is older).
	ConflictWith   string
	ConflictServed bool
	// Invalid is the validator's message when the latest spec would not start.
	Invalid string
	// Errs are the same errors with their fields, for the admission webhook.
	Errs field.ErrorList
	// QueueSortConflict is upstream's message when the latest spec sorts the queue unlike the
	// oldest member.
	QueueSortConflict string
	// Latest is the entry of the latest spec when it is valid on its own, whether or not it is
	// what the process serves.
	Latest *profile.Profile
	// Entry is what the process serves for the profile: its latest spec, or when that is refused
	// its last good entry from the running configuration; nil leaves the profile out.
	Entry *profile.Profile
	// Leaving is set for a profile that left the Scheduler and is served with its running entry
	// until its new scheduler serves it.
	Leaving bool
	// Limit is set when the member is valid but does not fit: the Scheduler has its maximum of
	// members, or the member's entry would push the configuration past its maximum size.
	Limit LimitRefusal
	// AloneBytes is the size of the member's latest spec rendered as a process of its own, which
	// holds its entry: the admission webhook's bound of what the entry adds to the configuration.
	AloneBytes int
	// Preview holds the member's change back for its preview (spec.rollout.preview, Guard): the
	// member keeps its running entry meanwhile. It is not a refusal of the spec.
	Preview preview.Gate
}

// LimitRefusal is why a valid member does not fit into its Scheduler: reason TooManyMembers or
// ConfigTooLarge, and a message with the limit.
type LimitRefusal struct {
	Reason  string
	Message string
}

// MaxConfigBytes is the largest rendered configuration the operator applies: a ConfigMap holds
// at most 1 MiB, and the margin keeps room for its metadata.
const MaxConfigBytes = 1<<20 - 64<<10

// Refused tells whether the latest spec of the member is not what runs.
func (m *Member) Refused() bool {
	return m.ConflictWith != "" || m.Invalid != "" || m.QueueSortConflict != "" || m.Limit.Reason != ""
}

// SchedulerPlan is the configuration of a shared scheduler: its members in profile-name order
// and the rendered configuration of those with an entry (nil when none has one).
type SchedulerPlan struct {
	Members []*Member
	Config  *profile.Config
}

// Member returns the plan of the named profile, or nil.
func (pl *SchedulerPlan) Member(name string) *Member {
	for _, m := range pl.Members {
		if m.Profile.Name == name {
			return m
		}
	}
	return nil
}

// PlanScheduler works out what a shared scheduler serves. A profile that left it keeps its running
// entry until its new scheduler serves it (leavingMembers). Each member is checked on its own (name
// conflicts, Render and Validate with the process's extenders); a valid member that sorts the queue
// unlike the oldest member is refused, as upstream refuses such a configuration; a refused member
// keeps its entry of the configuration that runs now, read back from the running ConfigMap, and a
// member that never ran is left out. Both reconcilers compute it, so a profile's status and its
// Scheduler's configuration agree.
func (r *Planner) PlanScheduler(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *Process, d *appsv1.Deployment) (*SchedulerPlan, error) {
	var list schedulingv1alpha1.SchedulerProfileList
	// Planning only reads the profiles: the cache's own objects spare a copy of every profile
	// on every pass.
	if err := r.Reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	running, err := r.RunningEntries(ctx, s, proc, d)
	if err != nil {
		return nil, err
	}
	served, err := r.ServedNamesIndex(ctx)
	if err != nil {
		return nil, err
	}
	leaving, err := r.LeavingMembers(ctx, s, list.Items, running)
	if err != nil {
		return nil, err
	}
	// Both reconcilers plan the Scheduler on every pass of it and of each member: the plan of
	// the same inputs is computed once and shared (read-only) by those passes.
	var runningHash string
	if d != nil {
		runningHash = d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]
	}
	// A finished preview can hold or release a member's change: the outcomes known are part of
	// the key.
	key := planFingerprint(s, proc, r.Settings, list.Items, runningHash, running, served, leaving) + r.Previews.PlanKey()
	return r.Cache().plans.do(key, func() (*SchedulerPlan, error) { return r.PlanMembers(s, proc, list.Items, running, served, leaving) })
}

// LeavingMembers are the profiles that left the Scheduler (their schedulerRef names another
// one, or none) and that it still serves, while their new scheduler does not serve them yet:
// the Scheduler keeps their running entry until then, so that a move out never leaves a profile
// without a scheduler. A profile being deleted is not kept.
func (r *Planner) LeavingMembers(ctx context.Context, s *schedulingv1alpha1.Scheduler, all []schedulingv1alpha1.SchedulerProfile, running map[string]*profile.Profile) (map[string]bool, error) {
	var leaving map[string]bool
	for i := range all {
		p := &all[i]
		if running[p.Name] == nil || p.Spec.SchedulerRef.Name == s.Name || p.DeletionTimestamp != nil {
			continue
		}
		served, err := r.ServedByItsOwn(ctx, p)
		if err != nil {
			return nil, err
		}
		if !served {
			if leaving == nil {
				leaving = map[string]bool{}
			}
			leaving[p.Name] = true
		}
	}
	return leaving, nil
}

// ServedByItsOwn tells whether the scheduler that a profile names now serves it: its own
// scheduler, or another Scheduler, with every replica available on the configuration that the
// profile's status (or the Scheduler's) says it applied.
func (r *Planner) ServedByItsOwn(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (bool, error) {
	proc := DedicatedProcess(p, profile.SchedulerName(p))
	hash := p.Status.ConfigHash
	if ref := p.Spec.SchedulerRef.Name; ref != "" {
		s := &schedulingv1alpha1.Scheduler{}
		if err := r.Reader.Get(ctx, client.ObjectKey{Name: ref}, s); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !slices.ContainsFunc(s.Status.Profiles, func(m schedulingv1alpha1.SchedulerMember) bool { return m.Name == p.Name }) {
			return false, nil
		}
		proc, hash = SharedProcess(s), s.Status.ConfigHash
	}
	d, err := r.LiveDeployment(ctx, proc)
	if err != nil || d == nil {
		return false, err
	}
	return hash != "" && d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] == hash && DeploymentAvailable(d), nil
}

// PlanMembers is PlanScheduler with the profiles, the running entries and the served scheduler
// names given: the admission webhook plans with the profile under review in place of the stored one.
// leaving names the profiles that left and keep their running entry (leavingMembers).
func (r *Planner) PlanMembers(s *schedulingv1alpha1.Scheduler, proc *Process, all []schedulingv1alpha1.SchedulerProfile, running map[string]*profile.Profile, served ServedNames, leaving map[string]bool) (*SchedulerPlan, error) {
	pl := &SchedulerPlan{}
	procKey := ProcessKey(proc, r.Settings)
	for i := range all {
		p := &all[i]
		if leaving[p.Name] {
			pl.Members = append(pl.Members, &Member{Profile: p, SchedulerName: running[p.Name].SchedulerName, Entry: running[p.Name], Leaving: true})
			continue
		}
		if p.Spec.SchedulerRef.Name == "" || p.Spec.SchedulerRef.Name != s.Name || p.DeletionTimestamp != nil {
			continue
		}
		m := r.CheckMember(p, all, proc, served, procKey)
		if m.Refused() {
			m.Entry = running[p.Name]
		}
		pl.Members = append(pl.Members, m)
	}
	checkQueueSorts(r.Cache(), pl.Members, running, proc.Run.FeatureGates)
	r.GatePreviews(s, proc, pl.Members, running)
	slices.SortFunc(pl.Members, func(a, b *Member) int { return cmp.Compare(a.Profile.Name, b.Profile.Name) })
	var err error
	if pl.Config, err = r.renderWithinLimits(s, proc, pl.Members, running); err != nil {
		return nil, err
	}
	return pl, nil
}

// renderWithinLimits renders the members' entries, refusing alone the members that do not fit:
// past the member limit (MaxMembersPerScheduler), or whose entry pushes the configuration past MaxConfigBytes. The
// members that run now come first, then the others oldest first, so a newcomer never displaces
// a running member; a refused member keeps its running entry when that fits.
func (r *Planner) renderWithinLimits(s *schedulingv1alpha1.Scheduler, proc *Process, members []*Member, running map[string]*profile.Profile) (*profile.Config, error) {
	render := func(ms []*Member) (*profile.Config, error) {
		var entries []profile.Profile
		for _, m := range members { // profile-name order, as the configuration lists them
			if m.Entry != nil && slices.Contains(ms, m) {
				entries = append(entries, *m.Entry)
			}
		}
		if len(entries) == 0 {
			return nil, nil
		}
		return profile.RenderProcess(proc.ConfigProcess(r.Settings), entries)
	}
	order := slices.Clone(members)
	slices.SortStableFunc(order, func(a, b *Member) int {
		if ra, rb := running[a.Profile.Name] != nil, running[b.Profile.Name] != nil; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return ByAge(a.Profile, b.Profile)
	})
	var kept []*Member
	for _, m := range order {
		if m.Entry == nil {
			continue
		}
		if limit := r.Settings.MemberLimit(); len(kept) >= limit {
			m.Limit = LimitRefusal{Reason: schedulingv1alpha1.ReasonTooManyMembers,
				Message: fmt.Sprintf("Scheduler %s serves its maximum of %d profiles; this one is not served until another leaves", s.Name, limit)}
			m.Entry = nil
			continue
		}
		kept = append(kept, m)
	}
	cfg, err := render(kept)
	if err != nil || cfg == nil || len(cfg.YAML) <= MaxConfigBytes {
		return cfg, err
	}
	// Over the size: add the members one by one and refuse each one that pushes it over.
	var fits []*Member
	for _, m := range kept {
		cfg, err := render(append(fits, m))
		if err != nil {
			return nil, err
		}
		if len(cfg.YAML) <= MaxConfigBytes {
			fits = append(fits, m)
			continue
		}
		m.Limit = LimitRefusal{Reason: schedulingv1alpha1.ReasonConfigTooLarge,
			Message: fmt.Sprintf("with this profile the configuration of Scheduler %s would be %d bytes, more than the %d a ConfigMap can hold with its metadata; it is not rolled out, and the other profiles are", s.Name, len(cfg.YAML), MaxConfigBytes)}
		m.Entry = nil
		if prev := running[m.Profile.Name]; prev != nil {
			m.Entry = prev
			if cfg, err := render(append(fits, m)); err == nil && len(cfg.YAML) <= MaxConfigBytes {
				fits = append(fits, m)
			} else {
				m.Entry = nil
			}
		}
	}
	return render(fits)
}

// CheckMember checks one member on its own, as a profile with a scheduler of its own is checked.
// procKey is ProcessKey of proc: the check is remembered by it, the profile's name and its spec,
// so that only a member whose spec or process changed is built again.
func (r *Planner) CheckMember(p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, proc *Process, served ServedNames, procKey string) *Member {
	m := &Member{Profile: p, SchedulerName: profile.SchedulerName(p)}
	if m.ConflictWith, m.ConflictServed = NameOwner(p, all, m.SchedulerName, served); m.ConflictWith != "" {
		return m
	}
	c, _ := r.Cache().memberChecks.do(keyOf(procKey, p.Name, &p.Spec), func() (memberCheck, error) { return r.checkAlone(p, proc), nil })
	m.Entry, m.Invalid, m.Errs, m.AloneBytes = c.entry, c.invalid, c.errs, c.aloneBytes
	m.Latest = m.Entry
	return m
}

// checkAlone renders and validates a member as a process of its own with its Scheduler's settings.
// A member whose configuration alone is larger than a ConfigMap holds is not validated: no
// Scheduler can run it, which planMembers refuses (ConfigTooLarge), and building a scheduler of
// a configuration that large takes seconds, which an admission review does not have.
func (r *Planner) checkAlone(p *schedulingv1alpha1.SchedulerProfile, proc *Process) memberCheck {
	entry, cfg, err := r.RenderAlone(p, proc)
	if err != nil {
		return memberCheck{invalid: err.Error(), errs: RenderErrors(err)}
	}
	if len(cfg.YAML) > MaxConfigBytes {
		return memberCheck{entry: &entry, aloneBytes: len(cfg.YAML)}
	}
	r.Metrics.SchedulerBuilt(metrics.BuildMember)
	if errs := profile.ValidateWithGates(cfg.YAML, proc.Run.FeatureGates, proc.GatesPath()); len(errs) > 0 {
		return memberCheck{invalid: errs.ToAggregate().Error(), errs: errs}
	}
	return memberCheck{entry: &entry, aloneBytes: len(cfg.YAML)}
}

// RenderAlone renders a member as a process of its own with its Scheduler's settings: what
// Validate checks for one profile. The entry's queue sort is written the one way its plugin is
// (CanonicalQueueSort), so that members that sort their queues alike render alike.
func (r *Planner) RenderAlone(p *schedulingv1alpha1.SchedulerProfile, proc *Process) (profile.Profile, *profile.Config, error) {
	entry, err := profile.RenderProfile(p)
	if err != nil {
		return profile.Profile{}, nil, err
	}
	entry = r.CanonicalQueueSort(entry, proc.Run.FeatureGates)
	cfg, err := profile.RenderProcess(proc.ConfigProcess(r.Settings), []profile.Profile{entry})
	return entry, cfg, err
}

// checkQueueSorts refuses alone the members whose latest entry sorts the queue unlike their
// Scheduler (QueueSortRefusals); they keep their running entry, if any.
func checkQueueSorts(ms *Memos, members []*Member, running map[string]*profile.Profile, gates map[string]bool) {
	for m, msg := range QueueSortRefusals(ms, members, running, gates) {
		m.QueueSortConflict = msg
		m.Entry = running[m.Profile.Name]
	}
}

// QueueSortRefusals decides which members of one Scheduler are refused for their queue sort, and
// why; the reconcilers' plan and the admission webhook call it alike. Upstream requires every
// profile of one process to sort the queue alike; entries are compared after CanonicalQueueSort,
// so two spellings of one queue sort agree. When every entry agrees, nobody is refused: that is
// also how the members' teams change the Scheduler's queue sort together. Otherwise the queue
// sort of the configuration that runs is the Scheduler's, and with nothing running that of the
// oldest member; a member whose latest entry differs from it is refused alone, whatever its age,
// so that no team's queue sort changes the others' or stops their changes. A member refused for
// another reason counts with the entry it keeps (its running one), never its latest spec.
func QueueSortRefusals(ms *Memos, members []*Member, running map[string]*profile.Profile, gates map[string]bool) map[*Member]string {
	oldestFirst := slices.Clone(members)
	slices.SortFunc(oldestFirst, func(a, b *Member) int { return ByAge(a.Profile, b.Profile) })
	var first *profile.Profile
	agree := true
	for _, m := range oldestFirst {
		if m.Entry == nil {
			continue
		}
		if first == nil {
			first = m.Entry
			continue
		}
		if msg, err := ms.queueSortConflict(*first, *m.Entry, gates); err != nil || msg != "" {
			agree = false
			break
		}
	}
	if agree {
		return nil
	}
	ref, owner := schedulerQueueSort(oldestFirst, running)
	refused := map[*Member]string{}
	for _, m := range oldestFirst {
		if m.Entry == nil || m.Refused() || m.Entry == ref {
			continue
		}
		msg, err := ms.queueSortConflict(*ref, *m.Entry, gates)
		if err != nil {
			msg = err.Error()
		}
		if msg != "" {
			refused[m] = fmt.Sprintf("the Scheduler sorts its queue with %s (%s), and this profile's queue sort differs: %s", ref.QueueSortSpelling(), owner, msg)
		}
	}
	return refused
}

// schedulerQueueSort is the entry whose queue sort a Scheduler's members share: one of the
// configuration that runs (they all sort alike), else the oldest member's; and where it comes from.
func schedulerQueueSort(oldestFirst []*Member, running map[string]*profile.Profile) (*profile.Profile, string) {
	if names := sortedKeys(running); len(names) > 0 {
		return running[names[0]], "as the configuration that runs does"
	}
	for _, m := range oldestFirst {
		if m.Entry != nil {
			return m.Entry, "as its oldest member, SchedulerProfile " + m.Profile.Name + ", does"
		}
	}
	return nil, ""
}

// RunningEntries are the entries of the configuration that runs now, by profile name (the
// Scheduler's status says which scheduler name each profile had).
func (r *Planner) RunningEntries(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *Process, d *appsv1.Deployment) (map[string]*profile.Profile, error) {
	cm, err := r.RunningConfig(ctx, proc, d)
	if err != nil || cm == nil {
		return nil, err
	}
	// The ConfigMaps are immutable: one is read once, and its entries by profile name are
	// worked out once for the members the Scheduler's status lists. The result is shared: only
	// read it.
	var byProfileKey string
	if cm.UID != "" {
		byProfileKey = servedEntriesKey(string(cm.UID), s.Status.Profiles)
		if out, ok := r.Cache().runningByProfile.get(byProfileKey); ok {
			return out, nil
		}
	}
	bySchedulerName, err := r.Cache().ProfilesIn(cm)
	if err != nil {
		return nil, err
	}
	out := map[string]*profile.Profile{}
	for _, served := range s.Status.Profiles {
		if e, ok := bySchedulerName[served.SchedulerName]; ok {
			// A configuration an earlier operator rendered may spell a queue sort otherwise.
			e = r.CanonicalQueueSort(e, proc.Run.FeatureGates)
			out[served.Name] = &e
		}
	}
	if byProfileKey != "" {
		r.Cache().runningByProfile.put(byProfileKey, out)
	}
	return out, nil
}

// ProfilesIn are the entries of the configuration a ConfigMap holds, by scheduler name. The
// ConfigMaps are immutable: one is parsed once by its UID, for the cache's index of scheduler
// names (ConfigSchedulerNames) and the passes that read the running entries alike. The result
// is shared: only read it.
func (ms *Memos) ProfilesIn(cm *corev1.ConfigMap) (map[string]profile.Profile, error) {
	parse := func() (map[string]profile.Profile, error) {
		return profile.ProfilesIn([]byte(cm.Data[ConfigFileKey]))
	}
	if cm.UID == "" || ms == nil {
		return parse()
	}
	return ms.runningProfiles.do(string(cm.UID), parse)
}

// servedEntriesKey is the key of runningByProfile: the running ConfigMap and the members that
// the Scheduler's status lists with their scheduler names.
func servedEntriesKey(configMapUID string, served []schedulingv1alpha1.SchedulerMember) string {
	b := make([]byte, 0, len(configMapUID)+1+48*len(served))
	b = append(append(b, configMapUID...), 0)
	for _, m := range served {
		b = append(append(append(append(b, m.Name...), 0), m.SchedulerName...), 0)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RenderErrors places an error of rendering (args that are not a JSON object) on the spec.
func RenderErrors(err error) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}
}
