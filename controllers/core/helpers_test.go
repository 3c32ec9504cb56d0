package core

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/ctltest"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

var testSettings = ctltest.Settings

// fakeObjects are the reads and writes of the reconcilers and the webhook, on a fake client
// holding objs.
func fakeObjects(objs ...client.Object) processObjects {
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...)
	for _, i := range plan.FieldIndexes(heldBy(testSettings.Image), nil) {
		b = b.WithIndex(i.Obj, i.Field, i.Extract)
	}
	c := b.Build()
	return processObjects{client: c, Planner: plan.Planner{Reader: c, Settings: testSettings}}
}

// createdAt sets a stored object's creation time, which decides name and queue-sort conflicts.
func createdAt[T client.Object](obj T, minutesAgo int) T {
	obj.SetCreationTimestamp(metav1.NewTime(time.Now().Add(-time.Duration(minutesAgo) * time.Minute)))
	return obj
}

// dedicated and testConfig are ctltest's, by their short names.
var (
	dedicated  = ctltest.Dedicated
	testConfig = ctltest.Config
)
