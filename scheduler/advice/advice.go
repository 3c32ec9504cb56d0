// Package advice is the profile doctor: checks of a rendered profile that is valid but will not
// do what its author most likely meant (a scoring intent that other scorers outvote, args nothing
// reads, a spread constraint on a label no node carries, a plugin that switches off batching,
// preemption off while PriorityClasses rely on it). Each check has a stable code, a one-line
// message naming the fields, and a fix in docs/reference/advice.md, which is generated from the
// checks here. Advice never refuses anything: the webhook returns it as warnings, the reconciler
// as a condition and status entries, `manager render` and `manager simulate` print it.
//
// The checks are pure: they read a Profile (Load) and, for the cluster checks, a Cluster.
package advice

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// Family groups the checks by what went wrong.
type Family string

// The families of checks, in the order of the reference page.
const (
	// FamilyIntent is a scoring intent that other scorers outvote or work against.
	FamilyIntent Family = "Intent outvoted"
	// FamilyDead is configuration that nothing reads.
	FamilyDead Family = "Dead configuration"
	// FamilyCluster is a requirement that the cluster's nodes do not meet, or barely.
	FamilyCluster Family = "Cluster mismatch"
	// FamilyPerformance is a plugin or extender that costs the scheduler an optimization.
	FamilyPerformance Family = "Lost performance"
	// FamilySafety is a setting that can stop pods from being scheduled.
	FamilySafety Family = "Safety"
	// FamilyAutoscalers is a restriction of the scheduler that autoscalers, which read only pod
	// specs, cannot see.
	FamilyAutoscalers Family = "Autoscalers"
)

// Check is one rule of the doctor.
type Check struct {
	// Code is stable: the annotation scheduling.schedops.io/advice-ignore and dashboards name it.
	Code string
	// Title names the problem in a few words.
	Title string
	// Family is the kind of problem.
	Family Family
	// Summary says, in one sentence, what the check finds.
	Summary string
	// Fix says what to change, for the reference page.
	Fix string
	// NeedsCluster is true for checks that read the cluster's nodes or PriorityClasses.
	NeedsCluster bool
	// run returns one message per finding, naming the fields.
	run func(in *Input) []string
}

// Input is what the checks read.
type Input struct {
	// Profile is the rendered profile.
	Profile *Profile
	// Cluster is the cluster the profile will run on; nil skips the checks that need it.
	Cluster *Cluster
	// ProjectionDisabled tells that the profile's spec.projection turns off the projection of
	// its node restrictions onto its pods.
	ProjectionDisabled bool
}

// Cluster is what the cluster checks read of the cluster.
type Cluster struct {
	// Nodes are the cluster's nodes.
	Nodes []corev1.Node
	// PriorityClasses are the cluster's PriorityClasses.
	PriorityClasses []schedulingv1.PriorityClass
}

// Advice is one finding of a check.
type Advice struct {
	// Code is the check's code.
	Code string
	// Message names the fields and says what happens, in one line.
	Message string
}

// String is the advice as warnings and the command line print it.
func (a Advice) String() string {
	return a.Code + ": " + a.Message
}

// Checks are all the checks, by family and code.
func Checks() []Check {
	return slices.Concat(intentChecks, deadChecks, clusterChecks, performanceChecks, safetyChecks, autoscalerChecks)
}

// Run runs every check on in, except those whose codes ignore lists, and returns the findings
// in the order of Checks.
func Run(in *Input, ignore sets.Set[string]) []Advice {
	var out []Advice
	for _, c := range Checks() {
		if ignore.Has(c.Code) || (c.NeedsCluster && in.Cluster == nil) {
			continue
		}
		for _, msg := range c.run(in) {
			out = append(out, Advice{Code: c.Code, Message: msg})
		}
	}
	return out
}

// Ignored reads the codes that the annotation v1alpha1.AnnotationAdviceIgnore lists, separated
// by commas, from a profile's annotations.
func Ignored(annotations map[string]string) sets.Set[string] {
	out := sets.New[string]()
	for _, code := range strings.Split(annotations[v1alpha1.AnnotationAdviceIgnore], ",") {
		if code = strings.TrimSpace(code); code != "" {
			out.Insert(code)
		}
	}
	return out
}

// Codes are the distinct codes of advice, sorted.
func Codes(advice []Advice) []string {
	codes := sets.New[string]()
	for _, a := range advice {
		codes.Insert(a.Code)
	}
	return sets.List(codes)
}

// percent formats a share of 1 as a whole percentage.
func percent(share float64) string {
	return fmt.Sprintf("%.0f%%", 100*share)
}

// For loads the rendered configuration of a profile with its scheduler's feature gates and
// runs the checks, but those its annotation ignores, with the cluster (nil for none).
func For(data []byte, gates map[string]bool, cluster *Cluster, profile *v1alpha1.SchedulerProfile) ([]Advice, error) {
	p, err := Load(data, gates)
	if err != nil {
		return nil, err
	}
	return Run(InputOf(p, cluster, profile), Ignored(profile.Annotations)), nil
}

// InputOf is what the checks read of a loaded profile, the cluster and the SchedulerProfile.
func InputOf(loaded *Profile, cluster *Cluster, profile *v1alpha1.SchedulerProfile) *Input {
	return &Input{Profile: loaded, Cluster: cluster, ProjectionDisabled: !profile.Spec.Projection.ProjectsNodeRestrictions()}
}
