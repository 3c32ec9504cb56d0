// Package validation checks the args of the out-of-tree plugins. The plugins' constructors call
// it, so a bad args object fails the scheduler at start-up (and the operator's validation) with
// the path of the offending field.
package validation

import (
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
)

const (
	// MinWeight is the smallest weight of a NodeLabelPreference preference.
	MinWeight = 1
	// MaxWeight is the largest weight of a NodeLabelPreference preference, so that the sum of
	// weights stays far from overflowing whatever the number of preferences.
	MaxWeight = 100
)

// ValidateNodePoolArgs checks NodePoolArgs: the node selector is required and must be a valid
// label selector. Paths are relative to the args, like kube-scheduler's own args errors.
func ValidateNodePoolArgs(path *field.Path, args *config.NodePoolArgs) error {
	var errs field.ErrorList
	selPath := path.Child("nodeSelector")
	if args.NodeSelector == nil {
		errs = append(errs, field.Required(selPath, "the scheduler's node pool must be selected"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(args.NodeSelector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
	}
	return errs.ToAggregate()
}

// ValidateNodeLabelPreferenceArgs checks NodeLabelPreferenceArgs: every preference needs a
// valid label key, valid label values and a weight from MinWeight to MaxWeight.
func ValidateNodeLabelPreferenceArgs(path *field.Path, args *config.NodeLabelPreferenceArgs) error {
	var errs field.ErrorList
	for i, p := range args.Preferences {
		prefPath := path.Child("preferences").Index(i)
		keyPath := prefPath.Child("key")
		if p.Key == "" {
			errs = append(errs, field.Required(keyPath, ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(p.Key, keyPath)...)
		}
		for j, v := range p.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(prefPath.Child("values").Index(j), v, msg))
			}
		}
		if p.Weight < MinWeight || p.Weight > MaxWeight {
			errs = append(errs, field.Invalid(prefPath.Child("weight"), p.Weight, fmt.Sprintf("must be in the range %d-%d", MinWeight, MaxWeight)))
		}
	}
	return errs.ToAggregate()
}
