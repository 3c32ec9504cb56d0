package assignment

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// assignmentNames are the scheduler names that namespace assignment knows, from the profiles'
// status: served, those a running scheduler serves (status.servedSchedulerName) for a profile
// that is not being deleted; notServed, every other name a profile asks for, with why it is not
// served. The oldest reason is kept when several profiles ask for one name.
func assignmentNames(profiles []schedulingv1alpha1.SchedulerProfile) (served map[string]bool, notServed map[string]string) {
	served, notServed = map[string]bool{}, map[string]string{}
	for i := range profiles {
		p := &profiles[i]
		if p.DeletionTimestamp == nil && p.Status.ServedSchedulerName != "" {
			served[p.Status.ServedSchedulerName] = true
		}
	}
	order := make([]*schedulingv1alpha1.SchedulerProfile, len(profiles))
	for i := range profiles {
		order[i] = &profiles[i]
	}
	slices.SortFunc(order, plan.ByAge)
	for _, p := range order {
		name := profile.SchedulerName(p)
		if _, known := notServed[name]; known || served[name] {
			continue
		}
		notServed[name] = profileNotServing(p, name)
	}
	return served, notServed
}

// profileNotServing says why no running scheduler serves the scheduler name a profile asks for.
func profileNotServing(p *schedulingv1alpha1.SchedulerProfile, name string) string {
	available := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable)
	switch {
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("SchedulerProfile %s is being deleted", p.Name)
	case p.Status.ServedSchedulerName != "":
		return fmt.Sprintf("SchedulerProfile %s is served as %s: its change to %s is not rolled out%s", p.Name, p.Status.ServedSchedulerName, name, heldBecause(p))
	case available != nil && available.Status != metav1.ConditionTrue:
		return fmt.Sprintf("SchedulerProfile %s is not Available (%s)", p.Name, available.Reason)
	}
	return fmt.Sprintf("no scheduler of SchedulerProfile %s runs yet", p.Name)
}

// heldBecause names the reason of the condition that holds a profile's change, if one does.
func heldBecause(p *schedulingv1alpha1.SchedulerProfile) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionConfigValid); c != nil && c.Status == metav1.ConditionFalse {
		return " (" + c.Reason + ")"
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionProgressing); c != nil {
		return " (" + c.Reason + ")"
	}
	return ""
}

// accessOf are the profiles that restrict who may use them, by name, with the names they serve
// or ask for. A name that another profile serves, or that the profile may not have (its
// ConfigValid reason is SchedulerNameConflict), is left out: a profile restricts only its own name.
func accessOf(profiles []schedulingv1alpha1.SchedulerProfile) []profileAccess {
	servedBy := map[string]string{}
	for i := range profiles {
		if n := profiles[i].Status.ServedSchedulerName; n != "" {
			servedBy[n] = profiles[i].Name
		}
	}
	var out []profileAccess
	for i := range profiles {
		p := &profiles[i]
		sel := p.Spec.Access.NamespaceSelector
		if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
			continue
		}
		var names []string
		if s := p.Status.ServedSchedulerName; s != "" {
			names = append(names, s)
		}
		asked := profile.SchedulerName(p)
		conflict := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionConfigValid)
		if owner, served := servedBy[asked]; (!served || owner == p.Name) && !slices.Contains(names, asked) &&
			(conflict == nil || conflict.Reason != schedulingv1alpha1.ReasonSchedulerNameConflict) {
			names = append(names, asked)
		}
		if len(names) > 0 {
			out = append(out, profileAccess{profile: p.Name, names: names, selector: sel.LabelSelector()})
		}
	}
	slices.SortFunc(out, func(a, b profileAccess) int { return strings.Compare(a.profile, b.profile) })
	return out
}
