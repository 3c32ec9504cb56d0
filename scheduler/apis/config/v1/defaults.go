package v1

import "k8s.io/utils/ptr"

// defaultWeight is the weight of a preference that sets none: every preference counts equally.
const defaultWeight int32 = 1

// SetDefaults_LabelPreference defaults the weight of a preference to 1. The generated
// defaulter calls it for every element of NodeLabelPreferenceArgs.Preferences.
func SetDefaults_LabelPreference(obj *LabelPreference) {
	if obj.Weight == nil {
		obj.Weight = ptr.To(defaultWeight)
	}
}
