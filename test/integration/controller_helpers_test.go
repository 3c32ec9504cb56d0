package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

const (
	// operatorNamespace is where the operator runs the schedulers (OPERATOR_NAMESPACE).
	operatorNamespace = "scheduler-profile-operator-system"
	// testImage is the scheduler image the reconciler is given (RELATED_IMAGE_SCHEDULER).
	testImage = "example.com/scheduler-profile-operator:test"
	// reconcileTimeout bounds every wait for the controller to reach a state. A pass takes
	// milliseconds; the margin is for a loaded 2-core machine.
	reconcileTimeout = 30 * time.Second
	// pollInterval is how often eventually and consistently look.
	pollInterval = 100 * time.Millisecond
	// managerStopTimeout bounds the wait for a stopped manager to return.
	managerStopTimeout = 30 * time.Second
)

// cluster is an apiserver the controller tests run on, and a client of its administrator.
type cluster struct {
	cfg   *rest.Config
	admin client.Client
}

// suiteCluster is the envtest apiserver of TestMain.
func suiteCluster() *cluster { return &cluster{cfg: cfg, admin: k8sClient} }

// ensureOperatorNamespace creates the operator's namespace if it does not exist. It is never
// deleted: envtest runs no namespace controller, so it would stay terminating.
func (k *cluster) ensureOperatorNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}
	if err := k.admin.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating namespace %s: %v", operatorNamespace, err)
	}
}

// eventually calls cond until it returns nil and fails the test with cond's last error if that
// does not happen within timeout. cond's error says what is not there yet.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(timeout)
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Timed out after %s waiting for %s: %v", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Test context ended while waiting for %s: %v", what, err)
		case <-time.After(pollInterval):
		}
	}
}

// consistently calls cond for the whole duration and fails the test as soon as it returns an error.
func consistently(t *testing.T, duration time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(duration)
	for {
		if err := cond(ctx); err != nil {
			t.Fatalf("%s stopped holding: %v", what, err)
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Test context ended while checking %s", what)
		case <-time.After(pollInterval):
		}
	}
}

// uniqueName returns prefix followed by a random suffix: every test has its own profiles, and
// -count=N reruns in the same apiserver never meet the objects of an earlier run.
func uniqueName(prefix string) string {
	return prefix + "-" + utilrand.String(5)
}

// profileWrapper builds SchedulerProfile fixtures.
type profileWrapper struct {
	schedulingv1alpha1.SchedulerProfile
}

func makeProfile(name string) *profileWrapper {
	return &profileWrapper{schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

func (w *profileWrapper) schedulerName(name string) *profileWrapper {
	w.Spec.SchedulerName = name
	return w
}

func (w *profileWrapper) replicas(n int32) *profileWrapper {
	w.Spec.Scheduler.Replicas = ptr.To(n)
	return w
}

// pluginConfig appends the args (JSON) of plugin name.
func (w *profileWrapper) pluginConfig(name, args string) *profileWrapper {
	w.Spec.PluginConfig = append(w.Spec.PluginConfig, schedulingv1alpha1.PluginConfig{Name: name, Args: runtime.RawExtension{Raw: []byte(args)}})
	return w
}

func (w *profileWrapper) obj() *schedulingv1alpha1.SchedulerProfile {
	return w.DeepCopy()
}

// createProfile creates p as the administrator and deletes it when the test ends. Its owned
// objects are deleted too: envtest runs no garbage collector.
func (k *cluster) createProfile(t *testing.T, p *schedulingv1alpha1.SchedulerProfile) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	if err := k.admin.Create(t.Context(), p); err != nil {
		t.Fatalf("Creating SchedulerProfile %s: %v", p.Name, err)
	}
	name := p.Name
	t.Cleanup(func() { k.deleteProfileAndObjects(t, name) })
	return p
}

// deleteProfileAndObjects deletes a profile and what it owns, as the garbage collector would.
func (k *cluster) deleteProfileAndObjects(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := client.IgnoreNotFound(k.admin.Delete(ctx, p)); err != nil {
		t.Errorf("Deleting SchedulerProfile %s: %v", name, err)
	}
	ofProfile := client.MatchingLabels{controllers.LabelProfile: name}
	for _, del := range []struct {
		obj       client.Object
		namespace string
	}{
		{&appsv1.Deployment{}, operatorNamespace},
		{&corev1.ConfigMap{}, operatorNamespace},
		{&corev1.ServiceAccount{}, operatorNamespace},
		{&rbacv1.Role{}, operatorNamespace},
		{&rbacv1.RoleBinding{}, operatorNamespace},
		{&rbacv1.RoleBinding{}, "kube-system"},
		{&rbacv1.ClusterRoleBinding{}, ""},
	} {
		opts := []client.DeleteAllOfOption{ofProfile}
		if del.namespace != "" {
			opts = append(opts, client.InNamespace(del.namespace))
		}
		if err := k.admin.DeleteAllOf(ctx, del.obj, opts...); err != nil {
			t.Errorf("Deleting the %T of %s: %v", del.obj, name, err)
		}
	}
}

// getProfile reads a profile from the apiserver.
func (k *cluster) getProfile(ctx context.Context, name string) (*schedulingv1alpha1.SchedulerProfile, error) {
	p := &schedulingv1alpha1.SchedulerProfile{}
	if err := k.admin.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
		return nil, err
	}
	return p, nil
}

// updateProfile changes a profile's spec with retries on conflicts (the controller writes its
// status concurrently) and returns the new generation.
func (k *cluster) updateProfile(t *testing.T, name string, mutate func(*schedulingv1alpha1.SchedulerProfile)) int64 {
	t.Helper()
	var generation int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := k.getProfile(t.Context(), name)
		if err != nil {
			return err
		}
		mutate(p)
		if err := k.admin.Update(t.Context(), p); err != nil {
			return err
		}
		generation = p.Generation
		return nil
	})
	if err != nil {
		t.Fatalf("Updating SchedulerProfile %s: %v", name, err)
	}
	return generation
}

// conditionWant is the expected state of one status condition.
type conditionWant struct {
	typ    string
	status metav1.ConditionStatus
	reason string
}

func (c conditionWant) String() string { return fmt.Sprintf("%s=%s (%s)", c.typ, c.status, c.reason) }

// waitForConditions waits until the profile's conditions describe its current generation and
// match want, and returns the profile as it was then.
func (k *cluster) waitForConditions(t *testing.T, name string, want ...conditionWant) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	var got *schedulingv1alpha1.SchedulerProfile
	eventually(t, reconcileTimeout, fmt.Sprintf("SchedulerProfile %s to have %v", name, want), func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		for _, w := range want {
			c := meta.FindStatusCondition(p.Status.Conditions, w.typ)
			switch {
			case c == nil:
				return fmt.Errorf("no %s condition (conditions: %s)", w.typ, formatConditions(p))
			case c.ObservedGeneration != p.Generation:
				return fmt.Errorf("%s describes generation %d, not %d", w.typ, c.ObservedGeneration, p.Generation)
			case c.Status != w.status || c.Reason != w.reason:
				return fmt.Errorf("%s is %s (%s): %s", w.typ, c.Status, c.Reason, c.Message)
			}
		}
		got = p
		return nil
	})
	return got
}

func findCondition(p *schedulingv1alpha1.SchedulerProfile, typ string) *metav1.Condition {
	return meta.FindStatusCondition(p.Status.Conditions, typ)
}

func formatConditions(p *schedulingv1alpha1.SchedulerProfile) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s gen %d", c.Type, c.Status, c.Reason, c.ObservedGeneration))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// waitForRollout waits until the profile's status reports a valid, applied configuration of its
// current generation, and returns the profile.
func (k *cluster) waitForRollout(t *testing.T, name string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, schedulingv1alpha1.ReasonConfigAccepted})
	var got *schedulingv1alpha1.SchedulerProfile
	eventually(t, reconcileTimeout, "status.observedGeneration of "+name, func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("status.observedGeneration is %d, generation %d", p.Status.ObservedGeneration, p.Generation)
		}
		got = p
		return nil
	})
	return got
}

// Keys of the objects a profile owns, by what they are for.
const (
	objServiceAccount         = "ServiceAccount"
	objKubeSchedulerBinding   = "ClusterRoleBinding kube-scheduler"
	objVolumeSchedulerBinding = "ClusterRoleBinding volume-scheduler"
	objAuthReaderBinding      = "RoleBinding authentication-reader"
	objLeaseRole              = "Role lease"
	objLeaseRoleBinding       = "RoleBinding lease"
	objConfigMap              = "ConfigMap"
	objDeployment             = "Deployment"
)

// ownedKeys returns empty objects with the names of the objects a profile owns: those fixed by
// the operator's naming scheme, and the ConfigMap configMap. The authentication-reader binding
// in kube-system is found by its profile label instead (fetchOwned).
func ownedKeys(p *schedulingv1alpha1.SchedulerProfile, configMap string) map[string]client.Object {
	inNS := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}
	}
	return map[string]client.Object{
		objServiceAccount:         &corev1.ServiceAccount{ObjectMeta: inNS(p.Name + "-scheduler")},
		objKubeSchedulerBinding:   &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scheduler-profile-operator:" + p.Name + ":kube-scheduler"}},
		objVolumeSchedulerBinding: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scheduler-profile-operator:" + p.Name + ":volume-scheduler"}},
		objLeaseRole:              &rbacv1.Role{ObjectMeta: inNS(p.Name + "-scheduler-lease")},
		objLeaseRoleBinding:       &rbacv1.RoleBinding{ObjectMeta: inNS(p.Name + "-scheduler-lease")},
		objConfigMap:              &corev1.ConfigMap{ObjectMeta: inNS(configMap)},
		objDeployment:             &appsv1.Deployment{ObjectMeta: inNS(p.Name + "-scheduler")},
	}
}

// fetchOwned reads every object profile p owns, with the ConfigMap configMap, through reader
// (the apiserver or a cache). The error names the first object that is missing.
func fetchOwned(ctx context.Context, reader client.Reader, p *schedulingv1alpha1.SchedulerProfile, configMap string) (map[string]client.Object, error) {
	objs := ownedKeys(p, configMap)
	for _, what := range slices.Sorted(maps.Keys(objs)) {
		obj := objs[what]
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, client.ObjectKeyFromObject(obj), err)
		}
	}
	var rbs rbacv1.RoleBindingList
	if err := reader.List(ctx, &rbs, client.InNamespace("kube-system"), client.MatchingLabels{controllers.LabelProfile: p.Name}); err != nil {
		return nil, fmt.Errorf("listing RoleBindings in kube-system: %w", err)
	}
	if len(rbs.Items) != 1 {
		var names []string
		for _, rb := range rbs.Items {
			names = append(names, rb.Name)
		}
		return nil, fmt.Errorf("%d RoleBindings of the profile in kube-system, want 1 %v", len(rbs.Items), names)
	}
	objs[objAuthReaderBinding] = &rbs.Items[0]
	return objs, nil
}

// waitForOwned waits until every object of the profile exists and returns them.
func (k *cluster) waitForOwned(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, configMap string) map[string]client.Object {
	t.Helper()
	var objs map[string]client.Object
	eventually(t, reconcileTimeout, "the objects of "+p.Name, func(ctx context.Context) error {
		var err error
		objs, err = fetchOwned(ctx, k.admin, p, configMap)
		return err
	})
	return objs
}

// resourceVersions maps each object to its resourceVersion.
func resourceVersions(objs map[string]client.Object) map[string]string {
	rvs := map[string]string{}
	for what, obj := range objs {
		rvs[what] = obj.GetResourceVersion()
	}
	return rvs
}

// markDeploymentAvailable writes the status the Deployment controller (absent in envtest) would
// write once every replica of the current template is available.
func (k *cluster) markDeploymentAvailable(t *testing.T, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
			return err
		}
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n,
			UpdatedReplicas:    n,
			ReadyReplicas:      n,
			AvailableReplicas:  n,
		}
		return k.admin.Status().Update(t.Context(), d)
	})
	if err != nil {
		t.Fatalf("Setting the status of Deployment %s: %v", name, err)
	}
}

// findEvent returns an events.k8s.io event about profile p with the event type and reason, whose
// note contains noteContains.
func (k *cluster) findEvent(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, eventType, reason, noteContains string) (*eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := k.admin.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var seen []string
	for i, e := range list.Items {
		if e.Regarding.Kind != "SchedulerProfile" || e.Regarding.UID != p.UID {
			continue
		}
		if e.Type == eventType && e.Reason == reason && strings.Contains(e.Note, noteContains) {
			return &list.Items[i], nil
		}
		seen = append(seen, e.Type+"/"+e.Reason)
	}
	return nil, fmt.Errorf("no %s event %s about %s with %q in its note (its events: %v)", eventType, reason, p.Name, noteContains, seen)
}

// logBuffer collects a manager's log lines; they are printed only if the test fails, and
// lines logged after the test ended are harmless.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) write(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(&b.buf, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var setGlobalLogger sync.Once

// newManager returns a manager for rc as main.go configures it, with the metrics and health
// endpoints off, and its logs kept in logs.
func newManager(t *testing.T, rc *rest.Config) (manager.Manager, *logBuffer) {
	t.Helper()
	// Controller-runtime complains once on stderr if nothing ever sets its global logger; the
	// managers here get their own.
	setGlobalLogger.Do(func() { ctrl.SetLogger(logr.Discard()) })
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Manager log:\n%s", logs)
		}
	})
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme:                 operatorenv.NewScheme(),
		Cache:                  controllers.CacheOptions(operatorNamespace),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 funcr.New(logs.write, funcr.Options{Verbosity: 1}),
		// Each test runs its own manager with the same controller in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("Creating the manager: %v", err)
	}
	return mgr, logs
}

// runManager starts mgr, waits for its cache, and stops it (and waits for it) when the test ends.
func runManager(t *testing.T, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("The manager stopped with: %v", err)
			}
		case <-time.After(managerStopTimeout):
			t.Errorf("The manager did not stop within %s", managerStopTimeout)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(t.Context(), reconcileTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatalf("The manager's cache did not sync within %s", reconcileTimeout)
	}
}

// startOperator runs the operator as main.go wires it, as the identity of rc, until the test
// ends. It returns the manager's log.
func (k *cluster) startOperator(t *testing.T, rc *rest.Config) *logBuffer {
	t.Helper()
	k.ensureOperatorNamespace(t)
	mgr, logs := newManager(t, rc)
	r := controllers.NewSchedulerProfileReconciler(mgr.GetClient(), mgr.GetEventRecorder(controllers.FieldManager), operatorNamespace, testImage)
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("Setting up the controller: %v", err)
	}
	runManager(t, mgr)
	return logs
}

// writeLog records the write calls a client makes.
type writeLog struct {
	mu    sync.Mutex
	calls []string
}

func (w *writeLog) add(verb string, obj any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fmt.Sprintf("%s %s", verb, describe(obj)))
}

// take returns the calls recorded so far and forgets them.
func (w *writeLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.calls
	w.calls = nil
	return calls
}

func describe(obj any) string {
	switch o := obj.(type) {
	case client.Object:
		return fmt.Sprintf("%T %s", o, client.ObjectKeyFromObject(o))
	case runtime.ApplyConfiguration:
		// Apply configurations of built-in types have name and namespace; encode for the rest.
		data, _ := json.Marshal(o)
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(data, &m)
		return fmt.Sprintf("%s %s/%s", m.Kind, m.Metadata.Namespace, m.Metadata.Name)
	}
	return fmt.Sprintf("%T", obj)
}

// countWrites wraps c so that every write call (create, update, patch, apply, delete, on the
// object or a subresource) is recorded in log before it is made.
func countWrites(c client.WithWatch, log *writeLog) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			log.add("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			log.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			log.add("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			log.add("apply", obj)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			log.add("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			log.add("deleteAllOf", obj)
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			log.add(sub+" create", obj)
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			log.add(sub+" update", obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			log.add(sub+" patch", obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			log.add(sub+" apply", obj)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

// requestLog records the HTTP requests of a rest.Config's clients: the wire-level count of
// writes, whatever client method made them.
type requestLog struct {
	mu       sync.Mutex
	requests []string
}

func (l *requestLog) wrap(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.requests = append(l.requests, req.Method+" "+req.URL.Path)
			l.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return rc
}

// take returns the write requests (anything but GET) and the number of all requests recorded so
// far, and forgets them.
func (l *requestLog) take() (writes []string, all int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.requests {
		if !strings.HasPrefix(r, http.MethodGet+" ") {
			writes = append(writes, r)
		}
	}
	all = len(l.requests)
	l.requests = nil
	return writes, all
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// waitForCache waits until reader (a manager's cache) holds the same resourceVersion of the
// profile and of every object it owns as the apiserver: then a pass through the cache reads
// exactly what is stored.
func (k *cluster) waitForCache(t *testing.T, reader client.Reader, name string) {
	t.Helper()
	eventually(t, reconcileTimeout, "the cache to catch up with "+name, func(ctx context.Context) error {
		live, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		cached := &schedulingv1alpha1.SchedulerProfile{}
		if err := reader.Get(ctx, client.ObjectKey{Name: name}, cached); err != nil {
			return fmt.Errorf("cached profile: %w", err)
		}
		if cached.ResourceVersion != live.ResourceVersion {
			return fmt.Errorf("cached profile has resourceVersion %s, the apiserver %s", cached.ResourceVersion, live.ResourceVersion)
		}
		if live.Status.ConfigMapName == "" {
			return nil
		}
		liveObjs, err := fetchOwned(ctx, k.admin, live, live.Status.ConfigMapName)
		if err != nil {
			return err
		}
		cachedObjs, err := fetchOwned(ctx, reader, live, live.Status.ConfigMapName)
		if err != nil {
			return fmt.Errorf("cached: %w", err)
		}
		for what, obj := range liveObjs {
			if got := cachedObjs[what].GetResourceVersion(); got != obj.GetResourceVersion() {
				return fmt.Errorf("cached %s has resourceVersion %s, the apiserver %s", what, got, obj.GetResourceVersion())
			}
		}
		return nil
	})
}
