package manager

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// defaultNamespace is the namespace `make deploy` installs the operator into.
const defaultNamespace = "scheduler-profile-operator-system"

// runRender is `manager render -f profile.yaml`: it prints the KubeSchedulerConfiguration of each
// SchedulerProfile in the file (one per Scheduler in the file for the profiles that name it), or
// the reasons the scheduler would refuse it, so that a pipeline
// can check a profile before it is merged. It returns the process exit code.
func runRender(args []string, stdout, stderr io.Writer) int {
	fs, o := renderFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if o.file == "" || fs.NArg() > 0 || (o.clusterFile != "" && o.kubeconfig != "") {
		fs.Usage()
		return exitUsage
	}
	if err := o.caps.Validate(); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}
	// kube-scheduler's defaulting logs at info level through klog; the output here is the
	// configuration or its errors, nothing else.
	klog.SetLogger(logr.Discard())
	objs, err := readObjects(o.file)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	out := &renderOutput{stdout: stdout, stderr: stderr, allowedPriorityClasses: o.allowed, caps: o.caps}
	if out.cluster, err = adviceCluster(o.clusterFile, o.kubeconfig); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	for _, p := range objs.profiles {
		if p.Spec.SchedulerRef.Name == "" {
			out.profile(p, o.namespace)
		}
	}
	for _, s := range objs.schedulers {
		out.scheduler(s, objs.members(s.Name), o.namespace)
	}
	for _, p := range objs.profiles {
		if p.Spec.SchedulerRef.Name != "" && objs.scheduler(p.Spec.SchedulerRef.Name) == nil {
			out.fail("SchedulerProfile %s names Scheduler %s, which is not in the file", p.Name, p.Spec.SchedulerRef.Name)
		}
	}
	return out.code
}

// renderOptions are the flags of `manager render`.
type renderOptions struct {
	file, namespace, clusterFile, kubeconfig string
	// allowed are the operator's --allowed-priority-classes.
	allowed []string
	caps    plan.SchedulerPodCaps
}

// renderFlags is the flag set of `manager render`, which prints its help to stderr, and the
// options it sets.
func renderFlags(stderr io.Writer) (*flag.FlagSet, *renderOptions) {
	o := &renderOptions{}
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.file, "f", "", "File with one or more SchedulerProfiles (YAML or JSON); - reads standard input.")
	fs.StringVar(&o.namespace, "namespace", defaultNamespace, "Namespace of the operator, where the scheduler's lease lives.")
	fs.Func("allowed-priority-classes", allowedPriorityClassesUsage, func(v string) error {
		o.allowed = append(o.allowed, commaList(v)...)
		return nil
	})
	capFlags(fs, &o.caps)
	fs.StringVar(&o.clusterFile, "cluster", "", "Snapshot of a cluster (as manager snapshot writes it) to run the advice's cluster checks against: its nodes' labels and PriorityClasses.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Run the advice's cluster checks against the live cluster of this kubeconfig instead of --cluster: it is read (listed) once, never written.")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: manager render -f profile.yaml [--namespace ns] [--allowed-priority-classes a,b] [--max-scheduler-cpu q] [--max-scheduler-memory q] [--allow-tolerate-all-taints] [--cluster snapshot.yaml | --kubeconfig FILE]")
		fmt.Fprintln(stderr, "Prints the KubeSchedulerConfiguration of each SchedulerProfile, or its errors (exit 1).")
		fmt.Fprintln(stderr, "Advice on a valid profile (docs/reference/advice.md) goes to stderr and does not change the exit code.")
		fs.PrintDefaults()
	}
	return fs, o
}

// renderOutput prints configurations to stdout and errors to stderr, and keeps the exit code.
type renderOutput struct {
	stdout, stderr io.Writer
	printed        int
	code           int
	// allowedPriorityClasses are the operator's --allowed-priority-classes.
	allowedPriorityClasses []string
	// caps are the operator's --max-scheduler-cpu and the other caps on scheduler pods.
	caps plan.SchedulerPodCaps
	// cluster is what the advice's cluster checks read; nil skips them.
	cluster *advice.Cluster
}

func (o *renderOutput) fail(format string, args ...any) {
	fmt.Fprintf(o.stderr, format+"\n", args...)
	o.code = 1
}

func (o *renderOutput) print(header string, cfg *profile.Config) {
	if o.printed > 0 {
		fmt.Fprintln(o.stdout, "---")
	}
	o.printed++
	fmt.Fprintf(o.stdout, "# %s, config hash %s\n", header, cfg.Hash)
	_, _ = o.stdout.Write(cfg.YAML)
}

// valid reports the errors of a rendered configuration of one profile, with the scheduler's
// feature gates (set at gatesPath), if any.
func (o *renderOutput) valid(what string, cfg *profile.Config, err error, gates map[string]bool, gatesPath *field.Path) bool {
	if err != nil {
		o.fail("%s: %v", what, err)
		return false
	}
	return o.check(what, profile.ValidateWithGates(cfg.YAML, gates, gatesPath))
}

// check prints errs, the field errors of what, and tells whether there were none.
func (o *renderOutput) check(what string, errs field.ErrorList) bool {
	if len(errs) == 0 {
		return true
	}
	fmt.Fprintf(o.stderr, "%s is invalid:\n", what)
	for _, e := range errs {
		fmt.Fprintf(o.stderr, "  %s\n", e.Error())
	}
	o.code = 1
	return false
}

// profile prints the configuration of a profile that runs its own scheduler. Its scheduler's
// settings are checked first, as the operator checks them.
func (o *renderOutput) profile(p *schedulingv1alpha1.SchedulerProfile, namespace string) {
	if !o.check("SchedulerProfile "+p.Name, plan.ProfileSettingsErrors(p, o.allowedPriorityClasses, o.caps)) {
		return
	}
	cfg, err := profile.Render(p, profile.Settings{Namespace: namespace})
	if o.valid("SchedulerProfile "+p.Name, cfg, err, p.Spec.Scheduler.FeatureGates, field.NewPath("spec", "scheduler", "featureGates")) {
		o.print("SchedulerProfile "+p.Name, cfg)
		o.advise("SchedulerProfile "+p.Name, p, cfg, p.Spec.Scheduler.FeatureGates)
	}
}

// advise prints the advice on a valid profile, rendered as the one profile of its scheduler, to
// stderr: advice is not an error, and the exit code stays.
func (o *renderOutput) advise(what string, p *schedulingv1alpha1.SchedulerProfile, cfg *profile.Config, gates map[string]bool) {
	found, err := advice.For(cfg.YAML, gates, o.cluster, p)
	if err != nil {
		o.fail("%s: checking for advice: %v", what, err)
		return
	}
	printAdvice(o.stderr, what, found)
}

// adviceCluster reads the cluster of --cluster or --kubeconfig for the advice's cluster checks;
// nil without either.
func adviceCluster(file, kubeconfig string) (*advice.Cluster, error) {
	var c *simulate.Cluster
	var err error
	switch {
	case file != "":
		c, err = readCluster(file)
	case kubeconfig != "":
		c, err = liveCluster(context.Background(), kubeconfig)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return clusterOf(c), nil
}

// printAdvice prints the advice on what, one finding a line, or nothing when there is none.
func printAdvice(w io.Writer, what string, found []advice.Advice) {
	if len(found) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: advice (docs/reference/advice.md):\n", what)
	for _, a := range found {
		fmt.Fprintf(w, "  %s\n", a)
	}
}

// scheduler prints the configuration of a Scheduler with its members of the file, checked as the
// operator checks them: each on its own, then their queue sorts against the first, then together.
func (o *renderOutput) scheduler(s *schedulingv1alpha1.Scheduler, members []*schedulingv1alpha1.SchedulerProfile, namespace string) {
	proc := plan.SchedulerProcess(s, namespace)
	// The Scheduler's settings are its own: refused, they are reported once, not for every member.
	if !o.check("Scheduler "+s.Name, plan.SchedulerSettingsErrors(s, o.allowedPriorityClasses, o.caps)) {
		return
	}
	var entries []profile.Profile
	var names []string
	// advise prints the members' advice after the Scheduler's configuration.
	var advise []func()
	for _, p := range members {
		what := fmt.Sprintf("SchedulerProfile %s (Scheduler %s)", p.Name, s.Name)
		entry, err := profile.RenderProfile(p)
		var cfg *profile.Config
		if err == nil {
			cfg, err = profile.RenderProcess(proc, []profile.Profile{entry})
		}
		if !o.valid(what, cfg, err, s.Spec.FeatureGates, field.NewPath("spec", "featureGates")) {
			continue
		}
		if len(entries) > 0 {
			msg, err := profile.QueueSortConflict(entries[0], entry, s.Spec.FeatureGates)
			if err != nil {
				o.fail("%s: %v", what, err)
				continue
			}
			if msg != "" {
				o.fail("%s sorts the queue unlike %s: %s", what, names[0], msg)
				continue
			}
		}
		entries, names = append(entries, entry), append(names, p.Name)
		advise = append(advise, func() { o.advise(what, p, cfg, s.Spec.FeatureGates) })
	}
	if len(entries) == 0 {
		o.fail("Scheduler %s has no valid SchedulerProfile in the file", s.Name)
		return
	}
	cfg, err := profile.RenderProcess(proc, entries)
	if err == nil {
		err = profile.ValidateProcess(cfg.YAML, s.Spec.FeatureGates)
	}
	if err != nil {
		o.fail("Scheduler %s: %v", s.Name, err)
		return
	}
	o.print(fmt.Sprintf("Scheduler %s with profiles %s", s.Name, strings.Join(names, ", ")), cfg)
	for _, fn := range advise {
		fn()
	}
}

// objects are the SchedulerProfiles and Schedulers of a file, in the file's order.
type objects struct {
	profiles   []*schedulingv1alpha1.SchedulerProfile
	schedulers []*schedulingv1alpha1.Scheduler
}

// members are the profiles that name the Scheduler, by name, as the operator orders them.
func (o *objects) members(scheduler string) []*schedulingv1alpha1.SchedulerProfile {
	var out []*schedulingv1alpha1.SchedulerProfile
	for _, p := range o.profiles {
		if p.Spec.SchedulerRef.Name != "" && p.Spec.SchedulerRef.Name == scheduler {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *schedulingv1alpha1.SchedulerProfile) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (o *objects) scheduler(name string) *schedulingv1alpha1.Scheduler {
	for _, s := range o.schedulers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// readObjects reads every SchedulerProfile and Scheduler of a multi-document YAML file,
// strictly: a field the API does not have is an error, as it is for `kubectl apply`.
func readObjects(file string) (*objects, error) {
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close() //nolint:errcheck // opened for reading only: a failed Close loses nothing
		in = f
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	objs := &objects{}
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			n--
			continue
		}
		if err := objs.add(doc); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
		}
	}
	if len(objs.profiles) == 0 {
		return nil, fmt.Errorf("%s holds no SchedulerProfile", file)
	}
	return objs, nil
}

// add decodes one document, a SchedulerProfile or a Scheduler.
func (o *objects) add(doc []byte) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	if meta.APIVersion != schedulingv1alpha1.GroupVersion.String() || (meta.Kind != "SchedulerProfile" && meta.Kind != "Scheduler") {
		return fmt.Errorf("it is %s %s, not a %s SchedulerProfile or Scheduler", meta.APIVersion, meta.Kind, schedulingv1alpha1.GroupVersion)
	}
	var obj interface {
		GetName() string
	}
	if meta.Kind == "Scheduler" {
		s := &schedulingv1alpha1.Scheduler{}
		obj = s
		o.schedulers = append(o.schedulers, s)
	} else {
		p := &schedulingv1alpha1.SchedulerProfile{}
		obj = p
		o.profiles = append(o.profiles, p)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return err
	}
	if obj.GetName() == "" {
		return errors.New("metadata.name is required")
	}
	return nil
}
