package olm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// previousEnv names the directory of make previous-release: the previous release's tree (src)
	// with its bin/manager and bin/kube-scheduler.
	previousEnv = "OLM_PREVIOUS"
	// schedulerImageEnv is the operator's environment variable of the scheduler image.
	schedulerImageEnv = "RELATED_IMAGE_SCHEDULER"
	// upgradePodsNamespace holds the pods that name the profiles' schedulers during the upgrade.
	upgradePodsNamespace = "olm-upgrade-pods"
	// maxPending bounds how long a pod of a profile's scheduler may wait to be bound during the
	// upgrade: the scheduler's own rollout hands its lease over within seconds.
	maxPending = 30 * time.Second
)

// upgradeProfiles are the previous release's samples that run during the upgrade.
var upgradeProfiles = []string{"binpack", "spread"}

// previousRelease is the release that this tree's bundle replaces, as make previous-release
// builds it from its commit.
type previousRelease struct {
	// src is its tree; manager and scheduler its binaries.
	src, manager, scheduler string
	// csv is its CSV's name; image its operator's image and schedulerImage its schedulers'.
	csv, image, schedulerImage string
}

// findPreviousRelease reads the previous release's CSV from its bundle and checks that its
// binaries are built.
func findPreviousRelease() (previousRelease, error) {
	dir := os.Getenv(previousEnv)
	if dir == "" {
		return previousRelease{}, fmt.Errorf("%s must be set: run make test-olm", previousEnv)
	}
	src := filepath.Join(dir, "src")
	p := previousRelease{src: src, manager: filepath.Join(src, "bin", "manager"), scheduler: filepath.Join(src, "bin", "kube-scheduler")}
	for _, f := range []string{p.manager, p.scheduler} {
		if _, err := os.Stat(f); err != nil {
			return p, fmt.Errorf("run make previous-release: %w", err)
		}
	}
	csv, err := readCSV(filepath.Join(src, "bundle"))
	if err != nil {
		return p, err
	}
	p.csv = csv.Name
	p.image, p.schedulerImage, err = csvImages(csv)
	return p, err
}

// readCSV reads the ClusterServiceVersion of a bundle directory.
func readCSV(bundleDir string) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	files, err := filepath.Glob(filepath.Join(bundleDir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		return nil, fmt.Errorf("%s: want one CSV in manifests/, found %v (%v)", bundleDir, files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		return nil, fmt.Errorf("%s: %w", files[0], err)
	}
	return csv, nil
}

// csvImages are the operator's image of a CSV's Deployment and the scheduler image it is given.
func csvImages(csv *operatorsv1alpha1.ClusterServiceVersion) (operator, scheduler string, err error) {
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 || len(deps[0].Spec.Template.Spec.Containers) != 1 {
		return "", "", fmt.Errorf("CSV %s: want one Deployment of one container", csv.Name)
	}
	c := deps[0].Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == schedulerImageEnv {
			scheduler = e.Value
		}
	}
	if scheduler == "" {
		return "", "", fmt.Errorf("CSV %s: the operator has no %s", csv.Name, schedulerImageEnv)
	}
	return c.Image, scheduler, nil
}

// TestOLMUpgrade installs the previous release from the catalog, runs two of its sample profiles
// with their schedulers and pods, and has OLM upgrade it to this tree's bundle, which replaces
// it, as an admin approves an upgrade: each InstallPlan approved by hand. Throughout the upgrade,
// pods naming either scheduler are created every second; a watch of the scheduler Deployments
// sees every state the apiserver stored. It asserts that no scheduler was left without an
// available Deployment, that every pod was bound within maxPending, and that the new operator's
// upgrade wave moved the schedulers to its image one at a time (--upgrade-max-in-flight 1, the
// CSV's default), with the waiting one reporting UpgradeWaiting.
//
// The cluster must have nothing of the operator (TestOLM removes it all at its end), and has the
// Prometheus Operator's CRDs: the previous release's bundle ships a PrometheusRule and
// ServiceMonitors.
func TestOLMUpgrade(t *testing.T) {
	const ns = "scheduling-olm-upgrade"
	ctx := context.Background()
	current, err := readCSV(filepath.Join(paths.Root, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if current.Spec.Replaces != previous.csv {
		t.Fatalf("The bundle's CSV %s replaces %q, want the previous release's %s (make bundle)", current.Name, current.Spec.Replaces, previous.csv)
	}
	_, newSchedulerImage, err := csvImages(current)
	if err != nil {
		t.Fatal(err)
	}
	if newSchedulerImage == previous.schedulerImage {
		t.Fatalf("The previous release and this one run the same scheduler image %s: there is no wave to see", newSchedulerImage)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "schedulerprofiles.scheduling.schedops.io"}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}}); !apierrors.IsNotFound(err) {
		t.Fatalf("The cluster has the SchedulerProfile CRD before the previous release is installed (%v): TestOLM did not remove what stays", err)
	}
	if _, err := countMonitoring(ctx, ns, "ServiceMonitor"); err != nil {
		installMonitoringCRDs(t)
	}

	// The previous release, installed as its CSV's InstallPlan is approved.
	start := time.Now()
	subscribe(t, ns, previous.csv)
	approve(t, ns, previous.csv)
	waitCSV(t, ns, previous.csv, operatorsv1alpha1.CSVPhaseSucceeded, installTimeout)
	t.Logf("CSV %s Succeeded after %s", previous.csv, time.Since(start).Round(time.Second))
	op := startOperatorPod(t, ns)
	if got := op.binary; got != previous.manager {
		t.Fatalf("The previous release's Deployment runs %s, want %s", got, previous.manager)
	}
	runner := schedrunner.New(schedrunner.Options{
		Client: k8s, Namespace: ns, SchedulerBinary: paths.Scheduler,
		SchedulerBinaries: map[string]string{previous.schedulerImage: previous.scheduler},
		Kubeconfig:        cluster.Kubeconfig(), WorkDir: filepath.Join(workDir, "schedulers-"+ns),
	})
	runCtx, stopRunner := context.WithCancel(ctx)
	runnerDone := make(chan struct{})
	go func() { _ = runner.Run(runCtx); close(runnerDone) }()
	t.Cleanup(func() { stopRunner(); <-runnerDone })

	for _, name := range upgradeProfiles {
		sample := filepath.Join(previous.src, "config", "samples", "scheduling_v1alpha1_schedulerprofile_"+name+".yaml")
		if out, err := kubectl("apply", "--server-side", "-f", sample); err != nil {
			t.Fatalf("kubectl apply -f %s: %v\n%s", sample, err, out)
		}
	}
	names := waitProfilesRun(t, ns, previous.schedulerImage, op)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upgradePodsNamespace}}); err != nil {
		t.Fatal(err)
	}
	pods := &podStream{names: names}
	for _, name := range names {
		pods.create(t, name)
	}
	pods.waitBound(t)
	t.Logf("The previous release runs %v with scheduler image %s; a pod of each bound", names, previous.schedulerImage)

	// The upgrade, watched.
	cfg, err := cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	deployments := watchDeployments(t, watchCtx, watcher, ns, newSchedulerImage)
	reasons := watchProgressing(t, watchCtx, watcher)
	creating := pods.every(watchCtx, t, time.Second)

	start = time.Now()
	approve(t, ns, current.Name)
	waitOLM(t, ns, installTimeout, "OLM to update the operator's Deployment to "+current.Name+"'s", func(ctx context.Context) error {
		dep := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: deploymentName}, dep); err != nil {
			return err
		}
		if img := dep.Spec.Template.Spec.Containers[0].Image; managerOf(img) == previous.manager {
			return fmt.Errorf("the Deployment runs %s", img)
		}
		return nil
	})
	// The kubelet would replace the pod now: the previous release's process goes, this tree's
	// starts with the new Deployment's arguments and certificate.
	op.stop()
	op = startOperatorPod(t, ns)
	waitCSV(t, ns, current.Name, operatorsv1alpha1.CSVPhaseSucceeded, installTimeout)
	waitOLM(t, ns, installTimeout, "OLM to delete the replaced CSV "+previous.csv, func(ctx context.Context) error {
		old := &operatorsv1alpha1.ClusterServiceVersion{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: previous.csv}, old); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CSV %s: phase %q (%v)", previous.csv, old.Status.Phase, err)
		}
		sub := &operatorsv1alpha1.Subscription{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: subscriptionName}, sub); err != nil {
			return err
		}
		if sub.Status.InstalledCSV != current.Name {
			return fmt.Errorf("the Subscription's installedCSV is %q", sub.Status.InstalledCSV)
		}
		return nil
	})
	t.Logf("OLM upgraded %s to %s in %s", previous.csv, current.Name, time.Since(start).Round(time.Second))
	waitProfilesRun(t, ns, newSchedulerImage, op)
	t.Logf("Both schedulers run %s %s after the approval", newSchedulerImage, time.Since(start).Round(time.Second))
	<-creating.stop()
	pods.waitBound(t)
	stopWatch()

	report := deployments.wait()
	t.Logf("The scheduler Deployments during the upgrade:\n%s", report.timeline)
	for _, gap := range report.gaps {
		t.Errorf("A scheduler without an available Deployment during the upgrade: %s", gap)
	}
	if report.maxInFlight != 1 {
		t.Errorf("%d schedulers were moving to the new image at once at most, want 1 (the wave's --upgrade-max-in-flight)", report.maxInFlight)
	}
	if !slices.Equal(slices.Sorted(slices.Values(report.moved)), upgradeProfiles) {
		t.Errorf("The Deployments that moved to %s: %v, want both profiles'", newSchedulerImage, report.moved)
	}
	if seen := reasons.wait(); !seen[schedulingv1alpha1.ReasonUpgradeWaiting] {
		t.Errorf("No profile reported Progressing reason %s during the upgrade (reasons seen: %v)", schedulingv1alpha1.ReasonUpgradeWaiting, keys(seen))
	}
	t.Logf("%d pods created during the upgrade, each bound within %s (the longest %s)", pods.count(), maxPending, pods.longest)
	if lines := op.logLines("forbidden"); len(lines) > 0 {
		t.Errorf("The upgraded operator was forbidden %d requests:\n%v", len(lines), lines)
	}
}

// approve waits for the Subscription's InstallPlan of csv, which waits for approval, and approves
// it, as an admin does with `kubectl patch installplan ... spec.approved=true`; it returns once
// the plan is Complete.
func approve(t *testing.T, ns, csv string) {
	t.Helper()
	var plan *operatorsv1alpha1.InstallPlan
	waitOLM(t, ns, installTimeout, "the InstallPlan of "+csv+" to wait for approval", func(ctx context.Context) error {
		var err error
		if plan, err = installPlan(ctx, ns); err != nil {
			return err
		}
		if !slices.Contains(plan.Spec.ClusterServiceVersionNames, csv) || plan.Status.Phase != operatorsv1alpha1.InstallPlanPhaseRequiresApproval {
			return fmt.Errorf("InstallPlan %s of %v is %q", plan.Name, plan.Spec.ClusterServiceVersionNames, plan.Status.Phase)
		}
		return nil
	})
	patch := []byte(`{"spec":{"approved":true}}`)
	if err := k8s.Patch(context.Background(), plan, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("Approving InstallPlan %s: %v", plan.Name, err)
	}
	waitOLM(t, ns, installTimeout, "InstallPlan "+plan.Name+" to be Complete", func(ctx context.Context) error {
		p := &operatorsv1alpha1.InstallPlan{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(plan), p); err != nil {
			return err
		}
		if p.Status.Phase != operatorsv1alpha1.InstallPlanPhaseComplete {
			return fmt.Errorf("InstallPlan %s is %q", p.Name, p.Status.Phase)
		}
		return nil
	})
}

// waitProfilesRun waits until every upgrade profile is Available, its scheduler Deployment runs
// image and is rolled out, and a scheduler process of it is ready; it returns their scheduler
// names.
func waitProfilesRun(t *testing.T, ns, image string, op *operatorPod) []string {
	t.Helper()
	var names []string
	testutil.Eventually(t, 2*time.Minute, "the profiles "+fmt.Sprint(upgradeProfiles)+" to run "+image, func(ctx context.Context) error {
		names = nil
		for _, name := range upgradeProfiles {
			p := &schedulingv1alpha1.SchedulerProfile{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
				return err
			}
			if !hasCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable, "True") || p.Status.SchedulerName == "" {
				return fmt.Errorf("profile %s: scheduler name %q, conditions %+v\n%s", name, p.Status.SchedulerName, p.Status.Conditions, op.logTail(5))
			}
			dep, err := profileDeployment(ctx, ns, name)
			if err != nil {
				return err
			}
			if got := dep.Spec.Template.Spec.Containers[0].Image; got != image || !rolledOut(dep) {
				return fmt.Errorf("profile %s: Deployment %s runs %s, rolled out %v", name, dep.Name, got, rolledOut(dep))
			}
			names = append(names, p.Status.SchedulerName)
		}
		return nil
	})
	return names
}

// profileDeployment is the scheduler Deployment of a profile.
func profileDeployment(ctx context.Context, ns, profile string) (*appsv1.Deployment, error) {
	deps := &appsv1.DeploymentList{}
	if err := k8s.List(ctx, deps, client.InNamespace(ns), client.MatchingLabels{schedulingv1alpha1.LabelProfile: profile}); err != nil {
		return nil, err
	}
	if len(deps.Items) != 1 {
		return nil, fmt.Errorf("profile %s has %d scheduler Deployments", profile, len(deps.Items))
	}
	return &deps.Items[0], nil
}

// rolledOut reports whether every replica of the Deployment runs its template and is available.
func rolledOut(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}

// deploymentReport is what a watch of the scheduler Deployments saw.
type deploymentReport struct {
	// gaps are the moments a profile had no available Deployment.
	gaps []string
	// maxInFlight is the most Deployments that ran the new image and were not rolled out at once.
	maxInFlight int
	// moved are the profiles whose Deployment moved to the new image, in order.
	moved []string
	// timeline is every change of a Deployment's image or availability.
	timeline string
}

// deploymentWatch is a running watch of the scheduler Deployments.
type deploymentWatch struct {
	done   chan struct{}
	report deploymentReport
}

func (w *deploymentWatch) wait() deploymentReport {
	<-w.done
	return w.report
}

// watchDeployments follows every stored state of the scheduler Deployments of ns, in the
// apiserver's order, until ctx ends.
func watchDeployments(t *testing.T, ctx context.Context, c client.WithWatch, ns, newImage string) *deploymentWatch {
	t.Helper()
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.HasLabels{schedulingv1alpha1.LabelProfile}); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(ns), client.HasLabels{schedulingv1alpha1.LabelProfile},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	dw := &deploymentWatch{done: make(chan struct{})}
	state := map[string]*appsv1.Deployment{}
	for i := range list.Items {
		state[list.Items[i].Name] = &list.Items[i]
	}
	start := time.Now()
	var lines []string
	last := map[string]string{}
	note := func(d *appsv1.Deployment, event watch.EventType) {
		profile := d.Labels[schedulingv1alpha1.LabelProfile]
		image := d.Spec.Template.Spec.Containers[0].Image
		line := fmt.Sprintf("%s %s image=%s available=%d updated=%d rolledOut=%v", event, profile, image, d.Status.AvailableReplicas, d.Status.UpdatedReplicas, rolledOut(d))
		if line != last[d.Name] {
			last[d.Name] = line
			lines = append(lines, fmt.Sprintf("  +%5.1fs %s", time.Since(start).Seconds(), line))
		}
		if event == watch.Deleted || d.Status.AvailableReplicas == 0 {
			dw.report.gaps = append(dw.report.gaps, line)
		}
		if image == newImage && !slices.Contains(dw.report.moved, profile) {
			dw.report.moved = append(dw.report.moved, profile)
		}
		inFlight := 0
		for _, s := range state {
			if s.Spec.Template.Spec.Containers[0].Image == newImage && !rolledOut(s) {
				inFlight++
			}
		}
		dw.report.maxInFlight = max(dw.report.maxInFlight, inFlight)
	}
	go func() {
		defer close(dw.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				dw.report.timeline = strings.Join(lines, "\n")
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					dw.report.gaps = append(dw.report.gaps, "the watch of the Deployments ended early, so the rest is unseen")
					dw.report.timeline = strings.Join(lines, "\n")
					return
				}
				d, isDeployment := ev.Object.(*appsv1.Deployment)
				if !isDeployment {
					dw.report.gaps = append(dw.report.gaps, fmt.Sprintf("the watch said %s %v", ev.Type, ev.Object))
					continue
				}
				if ev.Type == watch.Deleted {
					delete(state, d.Name)
				} else {
					state[d.Name] = d
				}
				note(d, ev.Type)
			}
		}
	}()
	return dw
}

// reasonWatch collects the reasons of the profiles' Progressing condition.
type reasonWatch struct {
	done chan struct{}
	seen map[string]bool
}

func (w *reasonWatch) wait() map[string]bool {
	<-w.done
	return w.seen
}

// watchProgressing collects every reason of a SchedulerProfile's Progressing condition that the
// apiserver stores until ctx ends. The apiserver ends the watches of a custom resource when its CRD
// changes (OLM updates the CRDs in the upgrade), so the watch lists and starts again then.
func watchProgressing(t *testing.T, ctx context.Context, c client.WithWatch) *reasonWatch {
	t.Helper()
	rw := &reasonWatch{done: make(chan struct{}), seen: map[string]bool{}}
	note := func(p *schedulingv1alpha1.SchedulerProfile) {
		for _, c := range p.Status.Conditions {
			if c.Type == schedulingv1alpha1.ConditionProgressing {
				rw.seen[c.Reason] = true
			}
		}
	}
	go func() {
		defer close(rw.done)
		for ctx.Err() == nil {
			list := &schedulingv1alpha1.SchedulerProfileList{}
			if err := c.List(ctx, list); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for i := range list.Items {
				note(&list.Items[i])
			}
			w, err := c.Watch(ctx, &schedulingv1alpha1.SchedulerProfileList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*schedulingv1alpha1.SchedulerProfile); ok {
					note(p)
				}
			}
			w.Stop()
		}
	}()
	return rw
}

// podStream creates pods that name the profiles' schedulers and checks that they are bound.
type podStream struct {
	names []string
	mu    sync.Mutex
	pods  []string
	// longest is the longest a pod waited to be bound, as its PodScheduled condition says.
	longest time.Duration
}

func (s *podStream) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

// create creates a pod of upgradePodsNamespace that names the scheduler.
func (s *podStream) create(t *testing.T, schedulerName string) {
	s.mu.Lock()
	name := fmt.Sprintf("%s-%d", schedulerName, len(s.pods))
	s.pods = append(s.pods, name)
	s.mu.Unlock()
	if err := k8s.Create(context.Background(), testutil.MakePod(name, upgradePodsNamespace).SchedulerName(schedulerName).Obj()); err != nil {
		t.Errorf("Creating pod %s: %v", name, err)
	}
}

// creator is a running podStream.every.
type creator struct {
	cancel func()
	done   chan struct{}
}

// stop stops the creation; the channel closes once the last pod is created.
func (c creator) stop() <-chan struct{} {
	c.cancel()
	return c.done
}

// every creates a pod of each scheduler name every interval until ctx ends or stop.
func (s *podStream) every(ctx context.Context, t *testing.T, interval time.Duration) creator {
	ctx, cancel := context.WithCancel(ctx)
	c := creator{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			for _, name := range s.names {
				s.create(t, name)
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return c
}

// waitBound waits until every pod created is bound, and fails for a pod that waited longer than
// maxPending.
func (s *podStream) waitBound(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, maxPending+30*time.Second, "the pods of the profiles' schedulers to be bound", func(ctx context.Context) error {
		list := &corev1.PodList{}
		if err := k8s.List(ctx, list, client.InNamespace(upgradePodsNamespace)); err != nil {
			return err
		}
		var pending []string
		for _, p := range list.Items {
			if p.Spec.NodeName == "" {
				pending = append(pending, p.Name)
			}
		}
		if n := s.count(); len(list.Items) != n || len(pending) > 0 {
			return fmt.Errorf("%d pods of %d created, pending: %v", len(list.Items), n, pending)
		}
		return nil
	})
	list := &corev1.PodList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(upgradePodsNamespace)); err != nil {
		t.Fatal(err)
	}
	var slow []error
	for _, p := range list.Items {
		c := testutil.PodScheduled(&p)
		if c == nil {
			slow = append(slow, fmt.Errorf("pod %s bound to %s has no PodScheduled condition", p.Name, p.Spec.NodeName))
			continue
		}
		waited := c.LastTransitionTime.Sub(p.CreationTimestamp.Time)
		s.longest = max(s.longest, waited)
		if waited > maxPending {
			slow = append(slow, fmt.Errorf("pod %s of %s was bound %s after its creation", p.Name, p.Spec.SchedulerName, waited))
		}
	}
	if err := errors.Join(slow...); err != nil {
		t.Error(err)
	}
}
