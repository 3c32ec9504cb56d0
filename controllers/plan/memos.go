package plan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// memo remembers the results of pure, costly computations (a scheduler built to validate a
// configuration, a configuration planned) by a key that hashes all their inputs, so that a pass
// that meets the same inputs again reuses the result: one member's change in a Scheduler of N
// then costs one scheduler built, not N. An entry never goes stale, since its key names its
// inputs; the memo is emptied when it reaches max entries. Safe for concurrent use.
// Passes that meet the same inputs at once (the workers of both controllers, the webhook) wait
// for one computation.
type memo[V any] struct {
	mu       sync.Mutex
	max      int
	entries  map[string]V
	inFlight map[string]*memoCall[V]
}

// memoCall is a computation in flight: done is closed once v and err are set.
type memoCall[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func newMemo[V any](maxEntries int) *memo[V] {
	return &memo[V]{max: maxEntries, entries: map[string]V{}, inFlight: map[string]*memoCall[V]{}}
}

// do returns the remembered result of key, or computes it once with compute, which the callers
// of the same key at the same time wait for. An error is returned to them and not remembered. A
// nil memo remembers nothing.
func (m *memo[V]) do(key string, compute func() (V, error)) (V, error) {
	if m == nil {
		return compute()
	}
	m.mu.Lock()
	if v, ok := m.entries[key]; ok {
		m.mu.Unlock()
		return v, nil
	}
	if c, ok := m.inFlight[key]; ok {
		m.mu.Unlock()
		<-c.done
		return c.v, c.err
	}
	c := &memoCall[V]{done: make(chan struct{})}
	m.inFlight[key] = c
	m.mu.Unlock()
	c.v, c.err = compute()
	m.mu.Lock()
	delete(m.inFlight, key)
	if c.err == nil {
		m.putLocked(key, c.v)
	}
	m.mu.Unlock()
	close(c.done)
	return c.v, c.err
}

func (m *memo[V]) get(key string) (V, bool) {
	if m == nil {
		var zero V
		return zero, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.entries[key]
	return v, ok
}

func (m *memo[V]) put(key string, v V) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(key, v)
}

func (m *memo[V]) putLocked(key string, v V) {
	if len(m.entries) >= m.max {
		m.entries = map[string]V{}
	}
	m.entries[key] = v
}

// memberCheck is what checking a member alone found (checkMember): its entry, or why it is refused.
type memberCheck struct {
	entry   *profile.Profile
	invalid string
	errs    field.ErrorList
	// aloneBytes is the size of the member's configuration as a process of its own.
	aloneBytes int
}

// Memos are the memos of the operator: one object, built once in SetupManager and shared by
// both reconcilers and the webhook through their processObjects. Their sizes bound memory to a
// few MiB: a member check holds one rendered entry, a plan one per member. A zero Memos (nil
// Memos) remembers nothing.
type Memos struct {
	// memberChecks are the checks of members alone, by profile name and spec and process settings.
	memberChecks *memo[memberCheck]
	// queueSorts are upstream's messages on two entries' queue sorts, by both entries and the gates.
	queueSorts *memo[string]
	// canonicalSorts are entries with their queue sort written the one way, by entry and gates.
	canonicalSorts *memo[profile.Profile]
	// processChecks are the results of ValidateProcess by configuration and gates ("" for valid).
	processChecks *memo[string]
	// runningProfiles are the entries of running configurations by ConfigMap UID (they are immutable).
	runningProfiles *memo[map[string]profile.Profile]
	// runningByProfile are the running entries by profile name (runningEntries), by
	// servedEntriesKey: shared, read-only.
	runningByProfile *memo[map[string]*profile.Profile]
	// releasedProcesses are the members, by UID and generation, whose own scheduler was removed
	// (releaseOwnProcess).
	releasedProcesses *memo[bool]
	// dedicatedChecks are the validations of dedicated profiles' configurations
	// (validateDedicated), by configuration and gates: the errors, none for valid.
	dedicatedChecks *memo[field.ErrorList]
	// plans are the plans of Schedulers by planFingerprint.
	plans *memo[*SchedulerPlan]
	// configNames are the scheduler names of rendered configurations by namespace and ConfigMap
	// name (namesIn): the ConfigMaps are immutable and named by their content's hash, so an
	// entry never goes stale.
	configNames *memo[[]string]
	// adviceProfiles are the profiles the advice checks read (advice.Load: the framework built
	// from the configuration, which is what costs), by configuration and gates.
	adviceProfiles *memo[*advice.Profile]
}

// NewMemos returns the operator's memos, empty, with their bounds.
func NewMemos() *Memos {
	return &Memos{
		memberChecks:      newMemo[memberCheck](8192),
		queueSorts:        newMemo[string](8192),
		canonicalSorts:    newMemo[profile.Profile](8192),
		processChecks:     newMemo[string](512),
		runningProfiles:   newMemo[map[string]profile.Profile](512),
		runningByProfile:  newMemo[map[string]*profile.Profile](512),
		releasedProcesses: newMemo[bool](8192),
		dedicatedChecks:   newMemo[field.ErrorList](8192),
		plans:             newMemo[*SchedulerPlan](512),
		configNames:       newMemo[[]string](maxConfigNames),
		adviceProfiles:    newMemo[*advice.Profile](1024),
	}
}

// Cache returns r's memos, or memos that remember nothing when r has none (tests of parts that
// do not look at them).
func (r *Planner) Cache() *Memos {
	if r.Memos != nil {
		return r.Memos
	}
	return &Memos{}
}

// keyOf hashes the JSON of parts into a memo key.
func keyOf(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		writeJSON(h, p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeJSON writes v as JSON and a separator; a value that does not marshal writes its type
// and address, which no other call repeats, so nothing is remembered for it wrongly.
func writeJSON(h hash.Hash, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data = fmt.Appendf(nil, "unmarshalable %T %p", v, &v)
	}
	h.Write(data)
	h.Write([]byte{0})
}

// ProcessKey is the part of a member check's key that the process gives: what it renders around
// the member and the gates it validates with.
func ProcessKey(proc *Process, s Settings) string {
	return keyOf(proc.ConfigProcess(s), proc.Run.FeatureGates, proc.GatesPath().String())
}

// ValidateProcess is profile.ValidateProcess, remembered by configuration and gates.
func (r *Planner) ValidateProcess(cfg *profile.Config, gates map[string]bool) error {
	msg, _ := r.Cache().processChecks.do(keyOf(cfg.Hash, string(cfg.YAML), gates), func() (string, error) {
		r.Metrics.SchedulerBuilt(metrics.BuildCombined)
		if err := profile.ValidateProcess(cfg.YAML, gates); err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// CanonicalQueueSort is profile.CanonicalQueueSort, remembered by the entry and the gates.
func (r *Planner) CanonicalQueueSort(p profile.Profile, gates map[string]bool) profile.Profile {
	key := p.Fingerprint()
	if key == "" {
		return profile.CanonicalQueueSort(p, gates)
	}
	out, _ := r.Cache().canonicalSorts.do(keyOf(key, gates), func() (profile.Profile, error) {
		return profile.CanonicalQueueSort(p, gates), nil
	})
	return out
}

// queueSortConflict is profile.QueueSortConflict, remembered by what of both entries decides
// it (QueueSortFingerprint) and the gates; errors are not remembered.
func (ms *Memos) queueSortConflict(first, p profile.Profile, gates map[string]bool) (string, error) {
	a, b := first.QueueSortFingerprint(), p.QueueSortFingerprint()
	if a == "" || b == "" || ms == nil {
		return profile.QueueSortConflict(first, p, gates)
	}
	return ms.queueSorts.do(keyOf(a, b, gates), func() (string, error) {
		return profile.QueueSortConflict(first, p, gates)
	})
}

// planFingerprint hashes everything planMembers reads: the Scheduler's process settings, the
// member limit, which configuration runs with which members, the served names, the leaving
// members, and of every profile what decides its part: its identity, its spec (by generation;
// an object no apiserver stored has none, and is keyed by its resourceVersion), its age and
// whether it is being deleted. A profile's status is not read by planning, so a status write
// does not change the fingerprint. Every pass of a Scheduler and of each of its members computes
// it, so it is written into one buffer and hashed once, without a JSON encoding or a formatted
// string per profile.
func planFingerprint(s *schedulingv1alpha1.Scheduler, proc *Process, st Settings, all []schedulingv1alpha1.SchedulerProfile, runningConfig string, running map[string]*profile.Profile, served ServedNames, leaving map[string]bool) string {
	b := make([]byte, 0, 256+96*len(all)+48*len(s.Status.Profiles))
	str := func(v string) { b = append(append(b, v...), 0) }
	str(s.Name)
	str(ProcessKey(proc, st))
	b = strconv.AppendInt(b, int64(st.MemberLimit()), 10)
	str("")
	str(runningConfig)
	for _, m := range s.Status.Profiles {
		str(m.Name)
		str(m.SchedulerName)
	}
	str("")
	for _, name := range sortedKeys(running) {
		str(name)
	}
	str("")
	for _, name := range sortedKeys(served) {
		str(name)
		for _, p := range served[name] {
			str(p)
		}
		str("")
	}
	str("")
	for _, name := range sortedKeys(leaving) {
		str(name)
	}
	str("")
	// The cache lists in no stable order.
	order := make([]*schedulingv1alpha1.SchedulerProfile, len(all))
	for i := range all {
		order[i] = &all[i]
	}
	slices.SortFunc(order, func(a, b *schedulingv1alpha1.SchedulerProfile) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range order {
		str(p.Name)
		str(string(p.UID))
		if p.Generation == 0 {
			str("rv" + p.ResourceVersion)
		} else {
			b = strconv.AppendInt(b, p.Generation, 10)
			str("")
		}
		b = strconv.AppendInt(b, p.CreationTimestamp.UnixNano(), 10)
		b = strconv.AppendBool(b, p.DeletionTimestamp != nil)
		str("")
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Released tells whether the own scheduler of the member that key names (its UID and
// generation) was removed already.
func (ms *Memos) Released(key string) bool {
	_, done := ms.releasedProcesses.get(key)
	return done
}

// MarkReleased remembers that the own scheduler of the member that key names was removed.
func (ms *Memos) MarkReleased(key string) { ms.releasedProcesses.put(key, true) }

// ConfigSchedulerNames are the scheduler names of the configuration a ConfigMap holds (the cache
// holds only the operator's); none for a ConfigMap without one or one that does not parse.
func ConfigSchedulerNames(ms *Memos, obj client.Object) []string {
	cm := obj.(*corev1.ConfigMap)
	if _, ok := cm.Data[ConfigFileKey]; !ok {
		return nil
	}
	profiles, err := ms.ProfilesIn(cm)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	return names
}
