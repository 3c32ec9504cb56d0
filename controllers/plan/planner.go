package plan

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/controllers/preview"
)

// Planner works out, from what it reads, what the operator would run: the checks of a profile
// with a scheduler of its own, the plan of a Scheduler and its members, the names that are
// served now. It writes nothing. SetupManager builds one and hands it to both reconcilers and to
// admission, so that what admission refuses is what the reconcilers would refuse.
type Planner struct {
	// Reader reads the cluster: the manager's cache.
	Reader client.Reader
	// Settings are the operator's settings: its namespace, the scheduler image, the caps.
	Settings Settings
	// APIs checks through the apiserver's discovery the APIs that feature gates need; nil skips
	// the check.
	APIs *ServedAPIs
	// Previews runs the previews of changes, the profiles' and the members'; nil runs none
	// (admission's plans).
	Previews *preview.Previewer
	// Memos are the operator's memos (NewMemos), shared by every Planner built from the same
	// one; nil remembers nothing.
	Memos *Memos
	// Metrics are the operator's metrics; nil records none.
	Metrics *metrics.Metrics
}
