package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestApplyAllInWaves: a pass waits for the apiserver three times, not once per object. Every
// object that needs no other is applied at once (each of those applies waits here until all of
// them have started); the RoleBinding of the scheduler's lease Role once that Role is there (the
// apiserver's escalation check refuses to bind a Role it cannot find); and the Deployment once
// all the others are, since its pods need the configuration, the ServiceAccount and its bindings.
func TestApplyAllInWaves(t *testing.T) {
	p := testutil.MakeProfile("waves").Replicas(2).Obj()
	proc := dedicated(p)
	objs := (&processObjects{Planner: plan.Planner{Settings: testSettings}}).desiredObjects(proc, testConfig(t, p), testSettings.Image)
	leaseBinding := func(obj runtime.ApplyConfiguration) bool {
		rb, ok := obj.(*rbacv1ac.RoleBindingApplyConfiguration)
		return ok && ptr.Deref(rb.Name, "") == proc.Names.LeaseRole()
	}
	first := len(objs) - 2 // all but the lease RoleBinding and the Deployment
	var mu sync.Mutex
	started, done, roleDone := 0, 0, false
	allStarted := make(chan struct{})
	var bindingSawRole bool
	var deploymentAfter int
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			mu.Lock()
			switch {
			case leaseBinding(obj):
				bindingSawRole = roleDone
			case isDeployment(obj):
				deploymentAfter = done
			default:
				if started++; started == first {
					close(allStarted)
				}
				mu.Unlock()
				select {
				case <-allStarted:
				case <-time.After(5 * time.Second):
					mu.Lock()
					t.Errorf("%T waited 5 s for the other applies to start: %d of %d started", obj, started, first)
					mu.Unlock()
				}
				mu.Lock()
			}
			mu.Unlock()
			err := c.Apply(ctx, obj, opts...)
			mu.Lock()
			done++
			if _, ok := obj.(*rbacv1ac.RoleApplyConfiguration); ok {
				roleDone = true
			}
			mu.Unlock()
			return err
		},
	}).Build()
	r := processObjects{client: c, Planner: plan.Planner{Reader: c, Settings: testSettings}}
	if err := r.applyAll(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
	if !bindingSawRole {
		t.Error("the lease RoleBinding was applied before its Role was there")
	}
	if deploymentAfter != len(objs)-1 {
		t.Errorf("the Deployment was applied after %d of the others, want all %d", deploymentAfter, len(objs)-1)
	}
}

func isDeployment(obj runtime.ApplyConfiguration) bool {
	_, ok := obj.(*appsv1ac.DeploymentApplyConfiguration)
	return ok
}
