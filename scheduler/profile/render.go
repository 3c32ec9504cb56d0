// Package profile turns a SchedulerProfile into the KubeSchedulerConfiguration that its scheduler
// runs (Render) and checks that configuration the way the scheduler itself will (Validate).
// Both are pure: no client, no cluster.
package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// HashLength is the number of hex characters of the config hash used in names and annotations.
const HashLength = 10

// Settings are what the operator adds to a profile to render its configuration.
type Settings struct {
	// Namespace holds the scheduler's leader-election lease: the operator's namespace, never
	// kube-system, whose kube-scheduler lease belongs to the cluster's own scheduler.
	Namespace string
	// CASecrets are the extenders' TLS Secrets that hold a CA bundle (ca.crt): the scheduler
	// reads it from their mount. Without it, a Secret's CA is not used.
	CASecrets sets.Set[string]
}

// Config is a rendered KubeSchedulerConfiguration.
type Config struct {
	// YAML is the configuration file, byte for byte what the scheduler reads.
	YAML []byte
	// Hash is the first HashLength hex characters of the sha256 of YAML.
	Hash string
	// SchedulerName is the resolved scheduler name of the first profile.
	SchedulerName string

	// process and profiles are what the configuration was rendered from (RenderProcess), so that
	// OnLease can render it again on another lease.
	process  Process
	profiles []Profile
}

// OnLease is the same configuration on another leader-election lease: what a scheduler of an
// operator version that named its leases otherwise runs while it waits for its turn to move.
func (c *Config) OnLease(name string) (*Config, error) {
	if len(c.profiles) == 0 {
		return nil, fmt.Errorf("rendering the configuration %s on lease %q: it was not rendered from profiles", c.Hash, name)
	}
	proc := c.process
	proc.LeaseName = name
	return RenderProcess(proc, c.profiles)
}

// document is the rendered file. Only the fields the operator sets are here, so the file reads
// as the profile does; kube-scheduler defaults the rest when it loads it.
type document struct {
	APIVersion     string              `json:"apiVersion"`
	Kind           string              `json:"kind"`
	LeaderElection leaderElection      `json:"leaderElection"`
	Profiles       []renderedProfile   `json:"profiles"`
	Extenders      []configv1.Extender `json:"extenders,omitempty"`
}

// renderedProfile is configv1.KubeSchedulerProfile without the extension points left empty.
type renderedProfile struct {
	SchedulerName            string                  `json:"schedulerName"`
	PercentageOfNodesToScore *int32                  `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *renderedPlugins        `json:"plugins,omitempty"`
	PluginConfig             []configv1.PluginConfig `json:"pluginConfig,omitempty"`
}

// renderedPlugins is configv1.Plugins with optional plugin sets, so that an extension point the
// profile does not touch is not written as "{}".
type renderedPlugins struct {
	PreEnqueue         *configv1.PluginSet `json:"preEnqueue,omitempty"`
	QueueSort          *configv1.PluginSet `json:"queueSort,omitempty"`
	PreFilter          *configv1.PluginSet `json:"preFilter,omitempty"`
	Filter             *configv1.PluginSet `json:"filter,omitempty"`
	PostFilter         *configv1.PluginSet `json:"postFilter,omitempty"`
	PreScore           *configv1.PluginSet `json:"preScore,omitempty"`
	Score              *configv1.PluginSet `json:"score,omitempty"`
	Reserve            *configv1.PluginSet `json:"reserve,omitempty"`
	Permit             *configv1.PluginSet `json:"permit,omitempty"`
	PreBind            *configv1.PluginSet `json:"preBind,omitempty"`
	Bind               *configv1.PluginSet `json:"bind,omitempty"`
	PostBind           *configv1.PluginSet `json:"postBind,omitempty"`
	MultiPoint         *configv1.PluginSet `json:"multiPoint,omitempty"`
	PlacementGenerate  *configv1.PluginSet `json:"placementGenerate,omitempty"`
	PlacementScore     *configv1.PluginSet `json:"placementScore,omitempty"`
	PodGroupPostFilter *configv1.PluginSet `json:"podGroupPostFilter,omitempty"`
}

type leaderElection struct {
	LeaderElect       bool   `json:"leaderElect"`
	ResourceLock      string `json:"resourceLock"`
	ResourceName      string `json:"resourceName"`
	ResourceNamespace string `json:"resourceNamespace"`
	RetryPeriod       string `json:"retryPeriod"`
}

// leaseRetryPeriod is how often a standby scheduler tries to take the lease. During a rollout the
// new pod waits for its next try after the old one released the lease: upstream's 2s (with up
// to 1.2 times jitter) made the longest gap in bindings about 4s; 1s halves it, for one more read
// of the lease per second per standby.
const leaseRetryPeriod = "1s"

// LeasePrefix starts the name of every managed scheduler's leader-election lease. A scheduler
// may get and update its lease, so a lease named after the scheduler alone would let a profile
// named after another component's lock in the operator's namespace take that lock; no other
// component names its leases so.
const LeasePrefix = "schedops-"

// LeaseName is the lease of the scheduler process of a profile that runs its own scheduler. A
// scheduler name is a DNS-1123 label (at most 63 characters, no "."), so the lease name is a
// valid object name (a DNS-1123 subdomain) of at most 72 characters, and never that of a
// Scheduler's process, which has a ".".
func LeaseName(schedulerName string) string {
	return LeasePrefix + schedulerName
}

// SchedulerName is the name pods use to choose the profile: spec.schedulerName, or the
// profile's name when that is empty.
func SchedulerName(p *v1alpha1.SchedulerProfile) string {
	if p.Spec.SchedulerName != "" {
		return p.Spec.SchedulerName
	}
	return p.Name
}

// Render builds the KubeSchedulerConfiguration of a profile that runs its own scheduler: one
// profile with the spec's plugins, pluginConfig and percentageOfNodesToScore, the spec's
// extenders, leader election (always on, so that an old and a new scheduler can overlap during a
// rollout) on the lease LeaseName(scheduler name) in settings.Namespace, and the in-cluster client
// connection. The
// same spec always gives the same bytes: map keys are sorted, and lists keep the order the user
// gave, which is meaningful (plugins run in that order).
func Render(p *v1alpha1.SchedulerProfile, settings Settings) (*Config, error) {
	prof, err := RenderProfile(p)
	if err != nil {
		return nil, err
	}
	return RenderProcess(Process{
		Namespace: settings.Namespace,
		LeaseName: LeaseName(prof.SchedulerName),
		Extenders: p.Spec.Extenders,
		CASecrets: settings.CASecrets,
	}, []Profile{prof})
}

// Profile is one rendered entry of the profiles of a configuration.
type Profile struct {
	// SchedulerName is the name pods use to choose the entry.
	SchedulerName string
	entry         renderedProfile
}

// Process is what a scheduler process sets around its profiles.
type Process struct {
	// Namespace holds the leader-election lease: the operator's namespace.
	Namespace string
	// LeaseName names the lease.
	LeaseName string
	// Extenders are called by every profile of the process.
	Extenders []v1alpha1.Extender
	// CASecrets are the extenders' TLS Secrets that hold a CA bundle (ca.crt).
	CASecrets sets.Set[string]
}

// RenderProfile renders the entry of one profile, as it appears in the profiles of a
// configuration.
func RenderProfile(p *v1alpha1.SchedulerProfile) (Profile, error) {
	spec := &p.Spec
	prof := renderedProfile{
		SchedulerName:            SchedulerName(p),
		PercentageOfNodesToScore: spec.PercentageOfNodesToScore,
		Plugins:                  convertPlugins(spec.Plugins),
	}
	for i, pc := range spec.PluginConfig {
		args, err := normalizeArgs(pc.Args)
		if err != nil {
			return Profile{}, fmt.Errorf("spec.pluginConfig[%d].args: %w", i, err)
		}
		prof.PluginConfig = append(prof.PluginConfig, configv1.PluginConfig{Name: pc.Name, Args: args})
	}
	return Profile{SchedulerName: prof.SchedulerName, entry: prof}, nil
}

// RenderProcess builds the configuration of one scheduler process with the given profiles, in
// that order; the same input always gives the same bytes.
func RenderProcess(proc Process, profiles []Profile) (*Config, error) {
	if proc.Namespace == "" {
		return nil, fmt.Errorf("rendering the scheduler of lease %q: the lease namespace is empty", proc.LeaseName)
	}
	if len(profiles) == 0 {
		return nil, fmt.Errorf("rendering the scheduler of lease %q: no profiles", proc.LeaseName)
	}
	if errs := ValidateExtenders(proc.Extenders, extendersPath); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	doc := document{
		APIVersion: configv1.SchemeGroupVersion.String(),
		Kind:       "KubeSchedulerConfiguration",
		LeaderElection: leaderElection{
			LeaderElect:       true,
			ResourceLock:      "leases",
			ResourceName:      proc.LeaseName,
			ResourceNamespace: proc.Namespace,
			RetryPeriod:       leaseRetryPeriod,
		},
	}
	for _, p := range profiles {
		doc.Profiles = append(doc.Profiles, p.entry)
	}
	for _, e := range proc.Extenders {
		doc.Extenders = append(doc.Extenders, convertExtender(e, proc.CASecrets))
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("rendering the scheduler of lease %q: %w", proc.LeaseName, err)
	}
	sum := sha256.Sum256(out)
	return &Config{
		YAML: out, Hash: hex.EncodeToString(sum[:])[:HashLength], SchedulerName: profiles[0].SchedulerName,
		process: proc, profiles: slices.Clone(profiles),
	}, nil
}

// ProfilesIn reads the profiles of a rendered configuration back, by scheduler name: a shared
// scheduler keeps serving a member's last good entry, taken from the configuration that runs.
func ProfilesIn(data []byte) (map[string]Profile, error) {
	var doc document
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading a rendered configuration: %w", err)
	}
	out := make(map[string]Profile, len(doc.Profiles))
	for _, p := range doc.Profiles {
		out[p.SchedulerName] = Profile{SchedulerName: p.SchedulerName, entry: p}
	}
	return out, nil
}

// normalizeArgs re-encodes free-form args through a map, so their key order (and so the bytes
// and the hash) does not depend on how the client ordered them.
func normalizeArgs(args runtime.RawExtension) (runtime.RawExtension, error) {
	if len(args.Raw) == 0 {
		return runtime.RawExtension{}, nil
	}
	var v map[string]any
	if err := json.Unmarshal(args.Raw, &v); err != nil {
		return runtime.RawExtension{}, fmt.Errorf("args must be an object: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// convertPlugins copies each plugin set of the API type to the field of the same name of
// renderedPlugins. Going by name keeps this free of a fourth list of extension points; a test
// checks that both types have exactly the fields of upstream's configv1.Plugins.
func convertPlugins(in *v1alpha1.Plugins) *renderedPlugins {
	if in == nil {
		return nil
	}
	var out renderedPlugins
	src, dst := reflect.ValueOf(in).Elem(), reflect.ValueOf(&out).Elem()
	for f, v := range src.Fields() {
		set := reflect.Indirect(v)
		if !set.IsValid() {
			continue
		}
		dst.FieldByName(f.Name).Set(reflect.ValueOf(convertPluginSet(set.Interface().(v1alpha1.PluginSet))))
	}
	if out == (renderedPlugins{}) {
		return nil
	}
	return &out
}

func convertPluginSet(in v1alpha1.PluginSet) *configv1.PluginSet {
	if len(in.Enabled) == 0 && len(in.Disabled) == 0 {
		return nil
	}
	return &configv1.PluginSet{Enabled: convertPluginList(in.Enabled), Disabled: convertPluginList(in.Disabled)}
}

func convertPluginList(in []v1alpha1.Plugin) []configv1.Plugin {
	if len(in) == 0 {
		return nil
	}
	out := make([]configv1.Plugin, 0, len(in))
	for _, p := range in {
		out = append(out, configv1.Plugin{Name: p.Name, Weight: p.Weight})
	}
	return out
}

// convertExtender copies an extender into upstream's type, whose fields are values: an unset
// optional field of the API becomes the zero value, which upstream reads as unset.
func convertExtender(in v1alpha1.Extender, caSecrets sets.Set[string]) configv1.Extender {
	out := configv1.Extender{
		URLPrefix:        in.URLPrefix,
		FilterVerb:       ptr.Deref(in.FilterVerb, ""),
		PreemptVerb:      ptr.Deref(in.PreemptVerb, ""),
		PrioritizeVerb:   ptr.Deref(in.PrioritizeVerb, ""),
		Weight:           ptr.Deref(in.Weight, 0),
		BindVerb:         ptr.Deref(in.BindVerb, ""),
		EnableHTTPS:      ptr.Deref(in.EnableHTTPS, false),
		HTTPTimeout:      in.HTTPTimeout,
		NodeCacheCapable: ptr.Deref(in.NodeCacheCapable, false),
		Ignorable:        ptr.Deref(in.Ignorable, false),
	}
	if in.TLSConfig != nil {
		out.TLSConfig = convertTLSConfig(in.TLSConfig, caSecrets)
	}
	for _, r := range in.ManagedResources {
		out.ManagedResources = append(out.ManagedResources, configv1.ExtenderManagedResource{Name: r.Name, IgnoredByScheduler: ptr.Deref(r.IgnoredByScheduler, false)})
	}
	return out
}

// QueueSortFingerprint identifies what of the entry decides whether it sorts the queue like
// another entry (QueueSortConflict): its plugins and their args, not its scheduler name or its
// percentage of nodes to score. The operator keys the outcome of a pair on it, so that a change
// of the oldest member's other settings does not compare every member with it again.
func (p Profile) QueueSortFingerprint() string {
	data, err := json.Marshal(struct {
		Plugins      *renderedPlugins        `json:"plugins,omitempty"`
		PluginConfig []configv1.PluginConfig `json:"pluginConfig,omitempty"`
	}{p.entry.Plugins, p.entry.PluginConfig})
	if err != nil {
		return "" // an entry that does not marshal is never remembered
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Fingerprint identifies the entry by its content: two entries with the same fingerprint render
// to the same bytes. The operator keys what it learnt of an entry (its queue sort) on it.
func (p Profile) Fingerprint() string {
	data, err := json.Marshal(p.entry)
	if err != nil {
		return "" // an entry that does not marshal is never remembered
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
