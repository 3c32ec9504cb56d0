package profile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

var (
	specPath         = field.NewPath("spec")
	pluginConfigPath = specPath.Child("pluginConfig")
	pluginsPath      = specPath.Child("plugins")
	extendersPath    = specPath.Child("extenders")
)

// Validate checks a rendered configuration the way the scheduler will when it starts, and returns
// nil or the errors with field paths in SchedulerProfile terms (spec.pluginConfig[1].args...):
//
//  1. strict decoding through kube-scheduler's scheme, where our args types are registered, so an
//     unknown field anywhere, args included, is an error;
//  2. ValidateKubeSchedulerConfiguration, plus two mistakes that upstream lets through: args for a
//     plugin that does not exist, and an extender without urlPrefix;
//  3. building every plugin that has args with its factory, in order, so that bad args of several
//     plugins are all reported, always in the same order (the framework builds plugins in map
//     order and stops at the first error);
//  4. building the scheduler with the real framework and our registry against a fake clientset
//     (scheduler.New), which catches unknown plugins, plugins at extension points they do not
//     implement, missing queueSort or bind plugins, and weight overflow.
func Validate(data []byte) field.ErrorList {
	return ValidateWithGates(data, nil, nil)
}

// ValidateWithGates checks a rendered configuration as Validate does, with the feature gates the
// scheduler will run with (--feature-gates): they change its default plugins and what its plugins
// do. Refused gates are reported at gatesPath.<Name>, and nothing else is checked then.
func ValidateWithGates(data []byte, gates map[string]bool, gatesPath *field.Path) field.ErrorList {
	if errs := CheckGates(gates, gatesPath); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	if err := withGates(gates, func() { errs = validate(data) }); err != nil {
		return field.ErrorList{field.InternalError(gatesPath, err)}
	}
	return errs
}

func validate(data []byte) field.ErrorList {
	// written is the file as written, before kube-scheduler's defaulting merges the default
	// plugins in: error paths index into it.
	var written struct {
		Profiles []configv1.KubeSchedulerProfile `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &written); err != nil || len(written.Profiles) != 1 {
		return field.ErrorList{field.Invalid(specPath, field.OmitValueType{}, "not a KubeSchedulerConfiguration with one profile")}
	}
	v := &validator{written: written.Profiles[0], known: registry.All()}
	cfg, err := DecodeConfig(data)
	if err != nil {
		return decodeErrors(err)
	}
	if len(cfg.Profiles) != 1 {
		return field.ErrorList{field.Invalid(specPath, field.OmitValueType{}, "not a KubeSchedulerConfiguration with one profile")}
	}
	v.cfg = cfg
	for _, step := range []func() field.ErrorList{v.validateConfig, v.validateMistakes, v.validatePluginArgs, v.buildScheduler} {
		if errs := step(); len(errs) > 0 {
			return errs
		}
	}
	return nil
}

type validator struct {
	// written is the profile as written in the file.
	written configv1.KubeSchedulerProfile
	// cfg is the decoded and defaulted configuration, as the scheduler sees it.
	cfg *schedulerconfig.KubeSchedulerConfiguration
	// known are the plugins of the scheduler binary.
	known frameworkruntime.Registry
}

var (
	// strictArgsError matches kube-scheduler's message for unknown fields in a plugin's args.
	strictArgsError = regexp.MustCompile(`decoding \.profiles\[0\]\.pluginConfig\[(\d+)\]: `)
	unknownField    = regexp.MustCompile(`unknown field "([^"]+)"`)
	// pluginConfigError matches any other decoding error of a plugin's args.
	pluginConfigError = regexp.MustCompile(`decoding \.profiles\[0\]\.pluginConfig\[(\d+)\]: (.*)$`)
)

// decodeErrors gives each unknown field in plugin args its own error at its field path.
func decodeErrors(err error) field.ErrorList {
	var errs field.ErrorList
	if strict, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range strict.Errors() {
			m := strictArgsError.FindStringSubmatch(e.Error())
			if m == nil {
				continue
			}
			i, _ := strconv.Atoi(m[1])
			for _, f := range unknownField.FindAllStringSubmatch(e.Error(), -1) {
				errs = append(errs, field.Forbidden(pluginConfigPath.Index(i).Child("args", f[1]), "unknown field"))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if m := pluginConfigError.FindStringSubmatch(err.Error()); m != nil {
		i, _ := strconv.Atoi(m[1])
		return field.ErrorList{field.Invalid(pluginConfigPath.Index(i).Child("args"), field.OmitValueType{}, m[2])}
	}
	return field.ErrorList{field.Invalid(specPath, field.OmitValueType{}, err.Error())}
}

// validateConfig runs kube-scheduler's own validation of the configuration.
func (v *validator) validateConfig() field.ErrorList {
	agg := validation.ValidateKubeSchedulerConfiguration(v.cfg)
	if agg == nil {
		return nil
	}
	var errs field.ErrorList
	for _, err := range utilerrors.Flatten(agg).Errors() {
		var fe *field.Error
		if !errors.As(err, &fe) {
			errs = append(errs, field.Invalid(specPath, field.OmitValueType{}, err.Error()))
			continue
		}
		c := *fe
		c.Field = v.toSpecPath(c.Field)
		errs = append(errs, &c)
	}
	return errs
}

// pluginListIndex matches a path into a plugin list of the defaulted configuration.
var pluginListIndex = regexp.MustCompile(`^profiles\[0\]\.plugins\.(\w+)\.(enabled|disabled)\[(\d+)\](.*)$`)

// toSpecPath maps a KubeSchedulerConfiguration path to the SchedulerProfile field it came from:
// the one profile is the spec, and so are the extenders. Plugin list indexes are re-based onto the
// lists as written, since defaulting put the default plugins in front of them.
func (v *validator) toSpecPath(p string) string {
	if m := pluginListIndex.FindStringSubmatch(p); m != nil {
		i, _ := strconv.Atoi(m[3])
		if names := pluginNames(v.cfg.Profiles[0].Plugins, m[1], m[2]); i < len(names) {
			return v.pluginPath(names[i], m[1]).String() + m[4]
		}
	}
	// Some upstream paths use Go field names.
	p = strings.NewReplacer(".Enabled", ".enabled", ".Disabled", ".disabled").Replace(p)
	switch {
	case strings.HasPrefix(p, "profiles[0]."):
		return "spec." + strings.TrimPrefix(p, "profiles[0].")
	case p == "profiles[0]":
		return "spec"
	case strings.HasPrefix(p, "extenders"):
		return "spec." + p
	}
	return p
}

// validateMistakes reports what upstream validation accepts but is surely a mistake.
func (v *validator) validateMistakes() field.ErrorList {
	var errs field.ErrorList
	for i, pc := range v.written.PluginConfig {
		if _, ok := v.known[pc.Name]; !ok {
			errs = append(errs, field.NotFound(pluginConfigPath.Index(i).Child("name"), pc.Name))
		}
	}
	for i, e := range v.cfg.Extenders {
		if e.URLPrefix == "" {
			errs = append(errs, field.Required(extendersPath.Index(i).Child("urlPrefix"), "the URL of the extender"))
		}
	}
	return errs
}

// validatePluginArgs builds each configured plugin with its args, so that bad args are reported
// with paths below spec.pluginConfig[i].args, for every plugin and always in the same order.
// kube-scheduler's defaulting keeps the written entries first and appends default args for the
// other enabled plugins; an error in those (a plugin with a required argument, enabled without
// pluginConfig) is reported at spec.pluginConfig[<name>].
func (v *validator) validatePluginArgs() field.ErrorList {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handle, err := registry.NewHandle(ctx)
	if err != nil {
		return field.ErrorList{field.InternalError(specPath, err)}
	}
	var errs field.ErrorList
	for i, pc := range v.cfg.Profiles[0].PluginConfig {
		path := pluginConfigPath.Key(pc.Name)
		if i < len(v.written.PluginConfig) {
			path = pluginConfigPath.Index(i)
		}
		if err := buildPlugin(ctx, v.known[pc.Name], pc.Args, handle); err != nil {
			errs = append(errs, argsErrors(path.Child("args"), err)...)
		}
	}
	return errs
}

// buildPlugin runs a plugin's factory. Factories check their args first; whatever fails after
// that (the handle here has no running informers) is left to scheduler.New, which builds the
// plugin for real.
func buildPlugin(ctx context.Context, factory frameworkruntime.PluginFactory, args runtime.Object, h fwk.Handle) (err error) {
	if factory == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			err = nil
		}
	}()
	_, err = factory(ctx, args, h)
	return err
}

// argsErrors places the field errors of a plugin's args validation below path. An error
// without field errors is not about the args, and is left to scheduler.New.
func argsErrors(path *field.Path, err error) field.ErrorList {
	var errs field.ErrorList
	for _, e := range fieldErrors(err) {
		c := *e
		if c.Field == "" || c.Field == "<nil>" {
			c.Field = path.String()
		} else {
			c.Field = path.String() + "." + c.Field
		}
		errs = append(errs, &c)
	}
	return errs
}

// fieldErrors finds the field errors in err, which may be one or an aggregate of them.
func fieldErrors(err error) []*field.Error {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		var fe *field.Error
		if errors.As(err, &fe) {
			return []*field.Error{fe}
		}
		return nil
	}
	var out []*field.Error
	for _, e := range utilerrors.Flatten(agg).Errors() {
		out = append(out, fieldErrors(e)...)
	}
	return out
}

// buildScheduler builds the scheduler as kube-scheduler's Setup does, against a fake clientset.
func (v *validator) buildScheduler() field.ErrorList {
	if err := newScheduler(v.cfg); err != nil {
		return field.ErrorList{v.schedulerError(err)}
	}
	return nil
}

// newScheduler runs scheduler.New with a configuration and our registry against a fake clientset.
func newScheduler(cfg *schedulerconfig.KubeSchedulerConfiguration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := NewFakeScheduler(ctx, cfg, nil)
	return err
}

// FakeScheduler is a scheduler built by NewFakeScheduler, with the informer factories it reads,
// which the caller starts if it runs the scheduler's informers.
type FakeScheduler struct {
	*scheduler.Scheduler
	Informers    informers.SharedInformerFactory
	DynInformers dynamicinformer.DynamicSharedInformerFactory
}

// NewFakeScheduler builds the scheduler of cfg as kube-scheduler's Setup does: scheduler.New with
// our out-of-tree plugins and those of more (nil for none), against a fake clientset holding objs.
// Validation builds it to catch what only scheduler.New refuses; the benchmarks run its frameworks.
func NewFakeScheduler(ctx context.Context, cfg *schedulerconfig.KubeSchedulerConfiguration, more frameworkruntime.Registry, objs ...runtime.Object) (*FakeScheduler, error) {
	return NewSchedulerOn(ctx, cfg, more, fake.NewClientset(objs...))
}

// NewSchedulerOn builds the scheduler of cfg as NewFakeScheduler does, on a clientset the caller
// made: `manager simulate` reacts to the bindings on it.
func NewSchedulerOn(ctx context.Context, cfg *schedulerconfig.KubeSchedulerConfiguration, more frameworkruntime.Registry, client kubernetes.Interface) (*FakeScheduler, error) {
	outOfTree := registry.OutOfTree()
	if err := outOfTree.Merge(more); err != nil {
		return nil, err
	}
	fs := &FakeScheduler{
		Informers:    scheduler.NewInformerFactory(client, 0, nil),
		DynInformers: dynamicinformer.NewDynamicSharedInformerFactory(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), 0),
	}
	// A recorder without a channel drops the scheduler's events. NewFakeRecorder(0)'s unbuffered
	// channel, which nobody reads, blocked every goroutine that recorded one: each binding of a
	// simulation, and each failure handler, so that a preempting pod stopped the scheduler.
	recorders := func(string) events.EventRecorderLogger { return &events.FakeRecorder{} }
	var err error
	fs.Scheduler, err = scheduler.New(ctx, client, fs.Informers, fs.DynInformers, recorders,
		scheduler.WithComponentConfigVersion(cfg.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(outOfTree),
		scheduler.WithExtenders(withoutTLSFiles(cfg.Extenders)...),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		return nil, err
	}
	return fs, nil
}

// StartInformers starts the scheduler's informers and waits until they have synced and the
// scheduler's event handlers have handled what they listed, so that its cache holds the objects.
func (fs *FakeScheduler) StartInformers(ctx context.Context) error {
	fs.Informers.Start(ctx.Done())
	fs.DynInformers.Start(ctx.Done())
	for typ, ok := range fs.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer of %v did not sync", typ)
		}
	}
	return fs.WaitForHandlersSync(ctx)
}

// withoutTLSFiles are the extenders without their certificate files: those are the mounted
// Secrets, which exist only in the scheduler's pods (building an extender reads them), and the
// operator checks the Secrets themselves before it rolls a configuration out.
func withoutTLSFiles(extenders []schedulerconfig.Extender) []schedulerconfig.Extender {
	out := slices.Clone(extenders)
	for i := range out {
		if t := out[i].TLSConfig; t != nil {
			c := *t
			c.CertFile, c.KeyFile, c.CAFile = "", "", ""
			out[i].TLSConfig = &c
		}
	}
	return out
}

// DecodeConfig decodes a rendered configuration strictly through kube-scheduler's scheme, with
// its defaults, as the scheduler reads its --config.
func DecodeConfig(data []byte) (*schedulerconfig.KubeSchedulerConfiguration, error) {
	obj, _, err := registry.Decoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedulerconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("not a KubeSchedulerConfiguration: %T", obj)
	}
	return cfg, nil
}

// ValidateProcess checks the configuration of a scheduler process with several profiles as the
// scheduler will when it starts: decoding, kube-scheduler's validation and scheduler.New. Each
// profile passed Validate on its own before; this finds what only their combination breaks.
func ValidateProcess(data []byte, gates map[string]bool) error {
	var err error
	if gateErr := withGates(gates, func() { err = validateProcess(data) }); gateErr != nil {
		return gateErr
	}
	return err
}

func validateProcess(data []byte) error {
	cfg, err := DecodeConfig(data)
	if err != nil {
		return err
	}
	if agg := validation.ValidateKubeSchedulerConfiguration(cfg); agg != nil {
		return agg
	}
	return newScheduler(cfg)
}

// QueueSortConflict compares the queue sort of p (plugin and args, after kube-scheduler's
// defaulting) with that of first, as upstream does for the profiles of one process, which must
// all sort the queue alike. It returns the scheduler's message, or "" when they agree.
func QueueSortConflict(first, p Profile, gates map[string]bool) (msg string, err error) {
	if gateErr := withGates(gates, func() { msg, err = queueSortConflict(first, p) }); gateErr != nil {
		return "", gateErr
	}
	return msg, err
}

func queueSortConflict(first, p Profile) (string, error) {
	cfg, err := RenderProcess(Process{Namespace: "queue-sort", LeaseName: "queue-sort"}, []Profile{first, p})
	if err != nil {
		return "", err
	}
	decoded, err := DecodeConfig(cfg.YAML)
	if err != nil {
		return "", err
	}
	agg := validation.ValidateKubeSchedulerConfiguration(decoded)
	if agg == nil {
		return "", nil
	}
	var msgs []string
	for _, err := range utilerrors.Flatten(agg).Errors() {
		var fe *field.Error
		if errors.As(err, &fe) && strings.HasPrefix(fe.Field, "profiles[1].") && (strings.Contains(fe.Field, "queueSort") || strings.Contains(fe.Detail, "queueSort")) {
			msgs = append(msgs, strings.Replace(fe.Field, "profiles[1].", "spec.", 1)+": "+fe.Detail)
		}
	}
	return strings.Join(msgs, "; "), nil
}

var (
	pluginNotExist  = regexp.MustCompile(`(\w+)Plugin "([^"]+)" does not exist`)
	pluginNotExtend = regexp.MustCompile(`plugin "([^"]+)" does not extend (\w+)Plugin plugin`)
)

// schedulerError places an error of scheduler.New at the field that caused it, in the
// scheduler's own words without the wrapping that names the scheduler.
func (v *validator) schedulerError(err error) *field.Error {
	msg := err.Error()
	name := v.cfg.Profiles[0].SchedulerName
	if i := strings.LastIndex(msg, "scheduler name "+name+": "); i >= 0 {
		msg = msg[i+len("scheduler name "+name+": "):]
	}
	switch {
	case pluginNotExist.MatchString(msg):
		m := pluginNotExist.FindStringSubmatch(msg)
		return field.NotFound(v.pluginPath(m[2], lowerFirst(m[1])), m[2])
	case pluginNotExtend.MatchString(msg):
		m := pluginNotExtend.FindStringSubmatch(msg)
		return field.Invalid(v.pluginPath(m[1], lowerFirst(m[2])), m[1], fmt.Sprintf("the plugin does not implement the %s extension point", m[2]))
	case strings.Contains(msg, "queue sort plugin"):
		return field.Invalid(pluginsPath.Child("queueSort"), field.OmitValueType{}, msg)
	case strings.Contains(msg, "bind plugin"):
		return field.Invalid(pluginsPath.Child("bind"), field.OmitValueType{}, msg)
	case strings.Contains(msg, "core plugin"), strings.Contains(msg, "core of Score plugins"):
		return field.Invalid(pluginsPath.Child("score"), field.OmitValueType{}, msg)
	case strings.Contains(msg, "extender"):
		return field.Invalid(extendersPath, field.OmitValueType{}, msg)
	}
	return field.Invalid(pluginsPath, field.OmitValueType{}, msg)
}

// pluginPath finds where the written profile enables a plugin: at the extension point when it
// is listed there, else in multiPoint, else anywhere else.
func (v *validator) pluginPath(name, point string) *field.Path {
	if v.written.Plugins == nil {
		return pluginsPath
	}
	for _, p := range append([]string{point, "multiPoint"}, extensionPoints...) {
		for _, list := range []string{"enabled", "disabled"} {
			if i := slices.Index(pluginNames(v.written.Plugins, p, list), name); i >= 0 {
				return pluginsPath.Child(p, list).Index(i).Child("name")
			}
		}
	}
	return pluginsPath.Child(point)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// extensionPoints are the JSON names of the plugin sets of KubeSchedulerProfile.plugins, read off
// upstream's type so that an extension point added by a Kubernetes bump is known here too.
var extensionPoints = jsonFieldNames(reflect.TypeFor[configv1.Plugins]())

// jsonFieldNames lists the JSON names of a struct's fields, in their order.
func jsonFieldNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		names = append(names, strings.Split(f.Tag.Get("json"), ",")[0])
	}
	return names
}

// pluginNames returns the names of the enabled or disabled plugins of one extension point of a
// configv1.Plugins or a config.Plugins, which name their fields alike.
func pluginNames(plugins any, point, list string) []string {
	v := reflect.Indirect(reflect.ValueOf(plugins))
	if !v.IsValid() {
		return nil
	}
	set := v.FieldByName(upperFirst(point))
	if !set.IsValid() {
		return nil
	}
	l := set.FieldByName(upperFirst(list))
	names := make([]string, l.Len())
	for i := range names {
		names[i] = l.Index(i).FieldByName("Name").String()
	}
	return names
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
