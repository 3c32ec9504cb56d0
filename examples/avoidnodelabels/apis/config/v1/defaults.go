package v1

// DefaultLabel is the label key a profile that sets no labels avoids.
const DefaultLabel = "avoid.example.com/reserved"

// SetDefaults_AvoidNodeLabelsArgs defaults the labels to DefaultLabel. The generated defaulter
// calls it; kube-scheduler runs it for the args a profile writes and for a profile that enables
// the plugin without args.
func SetDefaults_AvoidNodeLabelsArgs(obj *AvoidNodeLabelsArgs) {
	if len(obj.Labels) == 0 {
		obj.Labels = []string{DefaultLabel}
	}
}
