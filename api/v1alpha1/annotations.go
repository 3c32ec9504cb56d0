package v1alpha1

// Keys that profile authors write on a SchedulerProfile.
const (
	// AnnotationAdviceIgnore on a SchedulerProfile lists, separated by commas, the codes of advice
	// (docs/reference/advice.md) that the operator does not report for it: the author knows and
	// means it.
	AnnotationAdviceIgnore = "scheduling.schedops.io/advice-ignore"
)
