package manager

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/scheduler/projection"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

// Exit codes of the offline subcommands, besides 0: render and snapshot exit with the first two,
// simulate with all four (Commands says what each means).
const (
	exitError = 1
	exitUsage = 2
	// exitUnschedulable is --fail-on-unschedulable's: the profile under test left pods unschedulable.
	exitUnschedulable = 3
	// exitLimit: a simulation reached --time-limit or --cpu-limit; the report says which and how
	// far it got.
	exitLimit = 4
)

// defaultZoneLabel is the node label the summary counts pods per zone by.
const defaultZoneLabel = "topology.kubernetes.io/zone"

// simulateOptions are the flags of `manager simulate`.
type simulateOptions struct {
	// stderr receives the advice on the profiles, apart from the report.
	stderr                                   io.Writer
	file, compare, clusterFile, workloadFile string
	kubeconfig                               string
	namespace, output, zoneLabel             string
	columns                                  []string
	failOnUnschedulable                      bool
	noProjection                             bool
	timeLimit, cpuLimit                      time.Duration
}

// runSimulate is `manager simulate`: it schedules a workload on a snapshot of a cluster with the
// scheduler a profile file would roll out (and with a second one, --compare), in this process,
// and prints where each pod lands. It returns the exit code.
func runSimulate(args []string, stdout, stderr io.Writer) int {
	o, code := parseSimulate(args, stderr)
	if code >= 0 {
		return code
	}
	o.stderr = stderr
	// The scheduler logs through klog; the output here is the report only.
	klog.SetLogger(logr.Discard())
	// This process only simulates: the simulation's garbage collector setting is its own.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(simulate.GCPercent)
	}
	report, err := o.run(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	if err := writeReport(stdout, report, o.output, o.columns); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	if stopped := report.Stopped(); stopped != nil {
		fmt.Fprintf(stderr, "profile %s: %s\n", stopped.Profile, stopped.Stopped)
		return exitLimit
	}
	if o.failOnUnschedulable && report.Unschedulable() > 0 {
		fmt.Fprintf(stderr, "%d of %d pods are unschedulable with %s\n", report.Unschedulable(), len(report.Runs[0].Pods), report.Runs[0].Profile)
		return exitUnschedulable
	}
	return 0
}

// parseSimulate reads the flags; a code of 0 or more is the exit code to return at once.
func parseSimulate(args []string, stderr io.Writer) (*simulateOptions, int) {
	o := &simulateOptions{}
	fs := simulateFlags(o, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, exitUsage
	}
	if o.file == "" || (o.clusterFile == "") == (o.kubeconfig == "") || fs.NArg() > 0 || !slices.Contains([]string{"text", "json", "yaml", "html"}, o.output) || o.cpuLimit < 0 {
		fs.Usage()
		return nil, exitUsage
	}
	return o, -1
}

// simulateFlags is the flag set of `manager simulate`, which sets o and prints its help to
// stderr.
func simulateFlags(o *simulateOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.file, "f", "", "File with the profile to simulate: one SchedulerProfile, or one Scheduler with its member SchedulerProfiles.")
	fs.StringVar(&o.compare, "compare", "", "File with a second profile (e.g. the one the cluster runs now) to simulate on the same cluster and workload, printed side by side.")
	fs.StringVar(&o.clusterFile, "cluster", "", "Snapshot of the cluster, as manager snapshot writes it (or any YAML/JSON of Nodes, Pods, ... and v1 Lists of them).")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Simulate on the live cluster of this kubeconfig instead of --cluster: it is read (listed) once, never written.")
	fs.StringVar(&o.workloadFile, "workload", "", "File of Pods, Deployments, ReplicaSets, StatefulSets and Jobs to schedule, expanded into pods; without it, the cluster's pending pods for the profile's scheduler names.")
	fs.StringVar(&o.namespace, "namespace", defaultNamespace, "Namespace of the operator, as for render.")
	fs.StringVar(&o.output, "o", "text", "Output format: text, json, yaml, or html (one self-contained page: a grid of the nodes per profile, shaded by requested CPU).")
	fs.StringVar(&o.zoneLabel, "zone-label", defaultZoneLabel, "The node label the summary counts pods per zone by.")
	fs.Func("columns", "Comma-separated node labels to print per pod, e.g. topology.kubernetes.io/zone,pool.", func(v string) error {
		for _, label := range strings.Split(v, ",") {
			if label = strings.TrimSpace(label); label != "" {
				o.columns = append(o.columns, label)
			}
		}
		return nil
	})
	fs.DurationVar(&o.timeLimit, "time-limit", simulate.DefaultLimit, fmt.Sprintf("The longest a simulation of one profile may take, in wall-clock time. One that reaches it stops, and its report says how many pods it decided (exit status %d); nothing else in a simulation depends on time.", exitLimit))
	fs.DurationVar(&o.cpuLimit, "cpu-limit", 0, fmt.Sprintf("The CPU time, of this whole process, that a simulation of one profile may use; 0 is no limit. One that reaches it stops as at --time-limit (exit status %d), whatever the load of the machine.", exitLimit))
	fs.BoolVar(&o.noProjection, "no-projection", false, "Do not write the profiles' node restrictions onto the workload's pods, as spec.projection.nodeRestrictions: Disabled would not: by default each pod of the workload file is projected as the operator's policy would at its creation.")
	fs.BoolVar(&o.failOnUnschedulable, "fail-on-unschedulable", false, fmt.Sprintf("Exit with status %d when the profile (-f) leaves any pod unschedulable, after printing the report.", exitUnschedulable))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: manager simulate -f profile.yaml (--cluster snapshot.yaml | --kubeconfig FILE) [--workload pods.yaml] [--compare other.yaml] [-o text|json|yaml|html]")
		fmt.Fprintln(stderr, "Schedules the workload one pod at a time with the scheduler the operator would roll out for the profile,")
		fmt.Fprintln(stderr, "in this process and without writing to any cluster, and prints each pod's node and a summary.")
		fmt.Fprintf(stderr, "Exit status: 0, or %d on an error, %d on bad flags, %d with --fail-on-unschedulable, %d at --time-limit or --cpu-limit.\n", exitError, exitUsage, exitUnschedulable, exitLimit)
		fs.PrintDefaults()
	}
	return fs
}

// run simulates the profile, and the one to compare it with.
func (o *simulateOptions) run(ctx context.Context) (*simulate.Report, error) {
	var cluster *simulate.Cluster
	var err error
	if o.kubeconfig != "" {
		cluster, err = liveCluster(ctx, o.kubeconfig)
	} else {
		cluster, err = readCluster(o.clusterFile)
	}
	if err != nil {
		return nil, err
	}
	files := []string{o.file}
	if o.compare != "" {
		files = append(files, o.compare)
	}
	report := &simulate.Report{}
	for _, file := range files {
		p, names, err := loadSimulationProfile(file, o.namespace)
		if err != nil {
			return nil, err
		}
		if err := printFileAdvice(o.stderr, file, o.namespace, clusterOf(cluster)); err != nil {
			return nil, err
		}
		access, err := fileAccess(file)
		if err != nil {
			return nil, err
		}
		workload, err := o.workload(cluster, names, access)
		if err != nil {
			return nil, err
		}
		if o.workloadFile != "" && !o.noProjection {
			if err := projectPods(workload.Pods, file, p.Config, names); err != nil {
				return nil, err
			}
		}
		results, err := simulate.Run(ctx, p, cluster, workload, simulate.Options{Limit: o.timeLimit, CPULimit: o.cpuLimit})
		var limit *simulate.LimitError
		if err != nil && !errors.As(err, &limit) {
			return nil, err
		}
		run := simulate.NewRunReport(p.Name, cluster, workload, results, o.columns, o.zoneLabel)
		if limit != nil {
			run.Stopped = limit.Error()
		}
		report.Runs = append(report.Runs, run)
	}
	if len(report.Runs) > 1 {
		report.Moved = simulate.Compare(report.Runs[0], report.Runs[1])
	}
	return report, nil
}

// workload is the workload file's pods, or the cluster's pending pods for schedulerNames.
func (o *simulateOptions) workload(cluster *simulate.Cluster, schedulerNames []string, access webhooks.DeniedFunc) (*simulate.Workload, error) {
	if o.workloadFile == "" {
		return &simulate.Workload{Pods: cluster.PendingPods(schedulerNames)}, nil
	}
	objs, err := readObjectFile(o.workloadFile)
	if err != nil {
		return nil, err
	}
	w, err := simulate.ExpandWorkload(objs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.workloadFile, err)
	}
	if err := assignPods(w.Pods, cluster, schedulerNames, o.namespace, access); err != nil {
		return nil, err
	}
	return w, nil
}

// assignPods gives the workload's pods the scheduler names their namespaces assign, as the
// assignment policy would when they are created, with the simulated profiles serving their
// names and their spec.access (access, nil for none), and annotates them as it would.
func assignPods(pods []*corev1.Pod, cluster *simulate.Cluster, schedulerNames []string, operatorNamespace string, access webhooks.DeniedFunc) error {
	namespaces := map[string]*corev1.Namespace{}
	for _, obj := range cluster.Objects {
		if ns, ok := obj.(*corev1.Namespace); ok {
			namespaces[ns.Name] = ns
		}
	}
	served := func(name string) (string, error) {
		if slices.Contains(schedulerNames, name) {
			return "", nil
		}
		return fmt.Sprintf("the simulation runs no profile of scheduler name %s", name), nil
	}
	for _, pod := range pods {
		ns := pod.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		name, annotation, err := webhooks.Assign(pod, namespaces[ns], operatorNamespace, served, access)
		if err != nil {
			return err
		}
		if name != "" {
			pod.Spec.SchedulerName = name
		}
		if annotation != "" {
			metav1.SetMetaDataAnnotation(&pod.ObjectMeta, schedulingv1alpha1.AnnotationAssignment, annotation)
		}
	}
	return nil
}

func readCluster(file string) (*simulate.Cluster, error) {
	objs, err := readObjectFile(file)
	if err != nil {
		return nil, err
	}
	return &simulate.Cluster{Objects: objs}, nil
}

func readObjectFile(file string) ([]runtime.Object, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // opened for reading only: a failed Close loses nothing
	objs, err := simulate.ReadObjects(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

// projectPods writes onto the workload's pods the node restrictions of the profiles of a file,
// as the projection policy would when they are created with their scheduler names: from the
// rendered configuration, for the profiles whose spec.projection does not turn it off. A pod
// that names none of the simulated names is scheduled as one of the first (simulate.Run), so it
// is projected as one.
func projectPods(pods []*corev1.Pod, file string, config []byte, names []string) error {
	objs, err := readObjects(file)
	if err != nil {
		return err
	}
	restrictions, err := projection.Of(config)
	if err != nil {
		return err
	}
	notes := map[string]string{}
	for _, p := range objs.profiles {
		name := profile.SchedulerName(p)
		if r, ok := restrictions[name]; ok && p.Spec.Projection.ProjectsNodeRestrictions() {
			notes[name] = r.Note(p.Name)
		}
	}
	for _, pod := range pods {
		name := pod.Spec.SchedulerName
		if !slices.Contains(names, name) && len(names) > 0 {
			name = names[0]
		}
		if note, ok := notes[name]; ok {
			projection.Project(pod, restrictions[name], note)
		}
	}
	return nil
}

// fileAccess is the access of the SchedulerProfiles of a file (spec.access), as the assignment
// policy applies it.
func fileAccess(file string) (webhooks.DeniedFunc, error) {
	objs, err := readObjects(file)
	if err != nil {
		return nil, err
	}
	return webhooks.AccessDenied(objs.profiles, profile.SchedulerName), nil
}

// loadSimulationProfile renders and validates the one profile of a file, as `manager render`
// does: a SchedulerProfile that runs its own scheduler, or a Scheduler with its members. It
// returns the configuration and the scheduler names pods choose its profiles by.
func loadSimulationProfile(file, namespace string) (simulate.Profile, []string, error) {
	objs, err := readObjects(file)
	if err != nil {
		return simulate.Profile{}, nil, err
	}
	switch {
	case len(objs.schedulers) == 1:
		return schedulerSimulation(objs.schedulers[0], objs.members(objs.schedulers[0].Name), namespace)
	case len(objs.schedulers) > 1:
		return simulate.Profile{}, nil, fmt.Errorf("%s holds %d Schedulers: simulate one at a time", file, len(objs.schedulers))
	case len(objs.profiles) > 1:
		return simulate.Profile{}, nil, fmt.Errorf("%s holds %d SchedulerProfiles and no Scheduler: simulate one at a time", file, len(objs.profiles))
	}
	p := objs.profiles[0]
	if p.Spec.SchedulerRef.Name != "" {
		return simulate.Profile{}, nil, fmt.Errorf("SchedulerProfile %s names Scheduler %s, which is not in %s", p.Name, p.Spec.SchedulerRef.Name, file)
	}
	what := "SchedulerProfile " + p.Name
	cfg, err := profile.Render(p, profile.Settings{Namespace: namespace})
	if err != nil {
		return simulate.Profile{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	gates := p.Spec.Scheduler.FeatureGates
	if err := invalid(what, profile.ValidateWithGates(cfg.YAML, gates, field.NewPath("spec", "scheduler", "featureGates"))); err != nil {
		return simulate.Profile{}, nil, err
	}
	return simulate.Profile{Name: p.Name, Config: cfg.YAML, FeatureGates: gates}, []string{cfg.SchedulerName}, nil
}

// schedulerSimulation renders a Scheduler's process with its members and checks it.
func schedulerSimulation(s *schedulingv1alpha1.Scheduler, members []*schedulingv1alpha1.SchedulerProfile, namespace string) (simulate.Profile, []string, error) {
	what := "Scheduler " + s.Name
	var entries []profile.Profile
	var names []string
	for _, p := range members {
		entry, err := profile.RenderProfile(p)
		if err != nil {
			return simulate.Profile{}, nil, fmt.Errorf("SchedulerProfile %s: %w", p.Name, err)
		}
		entries, names = append(entries, entry), append(names, entry.SchedulerName)
	}
	if len(entries) == 0 {
		return simulate.Profile{}, nil, fmt.Errorf("%s has no SchedulerProfile in the file", what)
	}
	cfg, err := profile.RenderProcess(plan.SchedulerProcess(s, namespace), entries)
	if err == nil {
		err = profile.ValidateProcess(cfg.YAML, s.Spec.FeatureGates)
	}
	if err != nil {
		return simulate.Profile{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	return simulate.Profile{Name: s.Name, Config: cfg.YAML, FeatureGates: s.Spec.FeatureGates}, names, nil
}

// printFileAdvice prints the advice on each profile of a file that simulate runs, on the
// cluster: each SchedulerProfile rendered as the one profile of its scheduler, a member with its
// Scheduler's extenders and feature gates, as the operator checks them.
func printFileAdvice(w io.Writer, file, namespace string, cluster *advice.Cluster) error {
	objs, err := readObjects(file)
	if err != nil {
		return err
	}
	for _, p := range objs.profiles {
		what := "SchedulerProfile " + p.Name
		proc := profile.Process{Namespace: namespace, LeaseName: profile.LeaseName(profile.SchedulerName(p)), Extenders: p.Spec.Extenders}
		gates := p.Spec.Scheduler.FeatureGates
		if s := objs.scheduler(p.Spec.SchedulerRef.Name); s != nil {
			what += fmt.Sprintf(" (Scheduler %s)", s.Name)
			proc, gates = plan.SchedulerProcess(s, namespace), s.Spec.FeatureGates
		}
		entry, err := profile.RenderProfile(p)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		cfg, err := profile.RenderProcess(proc, []profile.Profile{entry})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		found, err := advice.For(cfg.YAML, gates, cluster, p)
		if err != nil {
			return fmt.Errorf("%s: checking for advice: %w", what, err)
		}
		printAdvice(w, what, found)
	}
	return nil
}

// clusterOf is what the cluster checks of advice read of a simulated cluster.
func clusterOf(c *simulate.Cluster) *advice.Cluster {
	out := &advice.Cluster{}
	for _, o := range c.Objects {
		switch obj := o.(type) {
		case *corev1.Node:
			out.Nodes = append(out.Nodes, *obj)
		case *schedulingv1.PriorityClass:
			out.PriorityClasses = append(out.PriorityClasses, *obj)
		}
	}
	return out
}

// invalid is nil, or an error listing errs.
func invalid(what string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	lines := []string{what + " is invalid:"}
	for _, e := range errs {
		lines = append(lines, "  "+e.Error())
	}
	return errors.New(strings.Join(lines, "\n"))
}

// writeReport prints the report in the format of -o.
func writeReport(w io.Writer, report *simulate.Report, output string, columns []string) error {
	switch output {
	case "json":
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(data))
		return err
	case "html":
		return report.WriteHTML(w)
	case "yaml":
		data, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return report.WriteText(w, columns)
}
