package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// assignChild is one round of the assign benchmark, in a child process: an envtest apiserver;
// the operator in a process of its own, so that the benchmark's clients share neither its Go
// runtime nor its garbage collector; a served profile; a namespace labelled with its scheduler
// name and one not labelled. Once the operator's MutatingAdmissionPolicy assigns the labelled
// namespace's pods, it measures the creates of both namespaces, stops the operator's process and
// measures them again, and checks that every pod of the labelled namespace was assigned and none
// of the unlabelled one touched.
func assignChild(ctx context.Context, o options) error {
	c, admin, err := startClusterWithCRDs(o, "assign")
	if err != nil {
		return err
	}
	defer c.Stop()
	operator, err := startOperatorProcess(ctx, c, admin, o, "assign", operatorProcess{})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			operator.stop()
		}
	}()
	schedulerName, err := servedProfile(ctx, admin, testutil.MakeProfile(assignProfile).Obj())
	if err != nil {
		return err
	}
	if err := createAssignNamespaces(ctx, admin, schedulerName); err != nil {
		return err
	}
	r := assignResult{Rate: o.assignRate, Pods: o.assignPods, Clients: o.assignClients, Batch: o.assignBatch}
	for i, phase := range assignPhases {
		if i == 1 {
			operator.stop()
			stopped = true
			// The apiserver keeps applying the policy with the params it has.
			if err := waitAssigned(ctx, admin, assignLabelled); err != nil {
				return fmt.Errorf("with the operator stopped: %w", err)
			}
		}
		pid := 0
		if !stopped {
			pid = operator.pid()
		}
		p, err := measureAssignPhase(ctx, c.Client, o, pid, fmt.Sprintf("p%d", i))
		if err != nil {
			return fmt.Errorf("%s: %w", phase, err)
		}
		r.Phases = append(r.Phases, p)
	}
	if err := checkAssignments(ctx, c.Client, o, schedulerName); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.childOut, data, 0o644)
}

// servedProfile creates the profile p, waits until it is Available, runs a pod of its
// Deployment's template, running and ready as a kubelet would report it, and waits until the
// profile's status says that its scheduler name is served; it returns that name.
func servedProfile(ctx context.Context, admin client.Client, p *v1alpha1.SchedulerProfile) (string, error) {
	if _, err := availableProfile(ctx, admin, p); err != nil {
		return "", err
	}
	got := &v1alpha1.SchedulerProfile{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		return "", err
	}
	if err := runSchedulerPod(ctx, admin, got.Status.DeploymentName); err != nil {
		return "", err
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return false, err
		}
		return got.Status.ServedSchedulerName != "" && got.Status.ServedSchedulerName == got.Status.SchedulerName, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for SchedulerProfile %s to be served: %w", p.Name, err)
	}
	return got.Status.ServedSchedulerName, nil
}

// runSchedulerPod creates a pod of the template of the operator's Deployment name, running and
// ready, as the ReplicaSet controller and a kubelet would (none runs in envtest).
func runSchedulerPod(ctx context.Context, admin client.Client, name string) error {
	d := &appsv1.Deployment{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name + "-0", Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
		Spec:       d.Spec.Template.Spec,
	}
	pod.Spec.NodeName = "node-0"
	if err := admin.Create(ctx, pod); err != nil {
		return err
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := admin.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("marking scheduler pod %s ready: %w", pod.Name, err)
	}
	return nil
}

// createAssignNamespaces creates the benchmark's namespaces and waits until the pods of the
// labelled one are assigned.
func createAssignNamespaces(ctx context.Context, admin client.Client, schedulerName string) error {
	labels := map[string]map[string]string{assignLabelled: {v1alpha1.LabelAssignSchedulerName: schedulerName}}
	for _, ns := range assignNamespaces {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels[ns]}}); err != nil {
			return err
		}
	}
	if err := createFloorPolicy(ctx, admin); err != nil {
		return err
	}
	if err := waitAnnotated(ctx, admin, assignFloor, floorAnnotation, "true"); err != nil {
		return err
	}
	return waitAssigned(ctx, admin, assignLabelled)
}

// floorAnnotation is what the floor policy writes on the pods of assignFloor.
const floorAnnotation = "bench.schedops.io/floor"

// createFloorPolicy creates a MutatingAdmissionPolicy and its binding that add floorAnnotation to
// the pods created in assignFloor, by one JSON patch of a constant, and do nothing else.
func createFloorPolicy(ctx context.Context, admin client.Client) error {
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-floor"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: assignFloor}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
				Expression: `[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'` + floorAnnotation + `': 'true'}}]`,
			}}},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-floor"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy.Name},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating the floor policy: %w", err)
		}
	}
	return nil
}

// waitAnnotated creates dry-run pods in ns until one gets the annotation key with value.
func waitAnnotated(ctx context.Context, admin client.Client, ns, key, value string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod := testutil.MakePod("probe", ns).Obj()
		if err := admin.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, err
		}
		return pod.Annotations[key] == value, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods of namespace %s to be annotated %s: %w", ns, key, err)
	}
	return nil
}

// waitAssigned creates dry-run pods in ns until one is assigned: the apiserver has the policy,
// its binding and the served name.
func waitAssigned(ctx context.Context, admin client.Client, ns string) error {
	return waitAnnotated(ctx, admin, ns, v1alpha1.AnnotationAssignment, "assigned")
}

// measureAssignPhase times o.assignPods paced creates in each namespace, then the blocks of
// creates; prefix starts the names of the phase's pods.
func measureAssignPhase(ctx context.Context, cs kubernetes.Interface, o options, operatorPID int, prefix string) (assignPhase, error) {
	p := assignPhase{Creates: map[string][]time.Duration{}, Blocks: map[string][]time.Duration{}, CPU: map[string]blockCPU{}}
	if err := createBlocks(ctx, cs, o, operatorPID, prefix, &p); err != nil {
		return p, err
	}
	return p, timeCreates(ctx, cs, o, prefix, &p)
}

// timeCreates creates o.assignPods pods in each namespace, o.assignRate creates per second in
// all, every other one in the labelled namespace, so that a slow moment of the machine (a
// neighbour's build, a garbage collection) falls on both alike; it records how long each create
// took and the pace each namespace held.
func timeCreates(ctx context.Context, cs kubernetes.Interface, o options, prefix string, p *assignPhase) error {
	namespaces := []string{assignLabelled, assignUnlabelled}
	took, all, err := pacedCreates(ctx, cs, namespaces, prefix+"-paced", o.assignPods, o.assignRate)
	if err != nil {
		return fmt.Errorf("creating pods at a pace: %w", err)
	}
	p.Held = map[string]float64{}
	for _, ns := range namespaces {
		p.Creates[ns] = took[ns]
		p.Held[ns] = float64(o.assignPods) / all[ns].Seconds()
	}
	return nil
}

// pacedCreates creates n pods named prefix-<i> in each of namespaces, rate creates per second in
// all, the namespaces in turn create by create, each create when its time comes whether the ones
// before have returned or not. It returns how long each create of each namespace took, and how long
// each namespace's creates took, from the first create to the last answer.
func pacedCreates(ctx context.Context, cs kubernetes.Interface, namespaces []string, prefix string, n int, rate float64) (map[string][]time.Duration, map[string]time.Duration, error) {
	interval := time.Duration(float64(time.Second) / rate)
	took := make([][]time.Duration, len(namespaces))
	last := make([]time.Time, len(namespaces))
	for i := range took {
		took[i] = make([]time.Duration, n)
	}
	var mu sync.Mutex
	errs := make(chan error, n*len(namespaces))
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n * len(namespaces) {
		if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		k, j := i%len(namespaces), i/len(namespaces)
		wg.Go(func() {
			start := time.Now()
			ns := namespaces[k]
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, assignPod(ns, fmt.Sprintf("%s-%05d", prefix, j)), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
			end := time.Now()
			took[k][j] = end.Sub(start)
			mu.Lock()
			if end.After(last[k]) {
				last[k] = end
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(ctx.Err(), <-errs); err != nil {
		return nil, nil, err
	}
	byNS, all := map[string][]time.Duration{}, map[string]time.Duration{}
	for k, ns := range namespaces {
		byNS[ns] = took[k]
		// The namespace's first create started at begin + k intervals.
		all[ns] = last[k].Sub(begin.Add(time.Duration(k) * interval))
	}
	return byNS, all, nil
}

// createBlocks creates o.assignBlocks blocks of o.assignBatch pods in each namespace, as fast as
// o.assignClients clients can, the namespaces in turn in the order of a balanced Latin square,
// and records each block's duration and CPU.
func createBlocks(ctx context.Context, cs kubernetes.Interface, o options, operatorPID int, prefix string, p *assignPhase) error {
	for b := range o.assignBlocks {
		for _, i := range order(len(assignNamespaces), b) {
			ns := assignNamespaces[i]
			took, cpu, err := createBlock(ctx, cs, o, operatorPID, ns, fmt.Sprintf("%s-block-%02d", prefix, b))
			if err != nil {
				return fmt.Errorf("creating pods in %s: %w", ns, err)
			}
			p.Blocks[ns] = append(p.Blocks[ns], took)
			total := p.CPU[ns]
			total.add(cpu)
			p.CPU[ns] = total
		}
	}
	return nil
}

// createBlock creates o.assignBatch pods named prefix-<i> in ns with o.assignClients clients,
// and returns how long it took and the CPU the processes spent meanwhile.
func createBlock(ctx context.Context, cs kubernetes.Interface, o options, operatorPID int, ns, prefix string) (time.Duration, blockCPU, error) {
	before, err := roundCPU(operatorPID)
	if err != nil {
		return 0, blockCPU{}, err
	}
	begin := time.Now()
	err = cluster.ParallelN(ctx, o.assignClients, o.assignBatch, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, assignPod(ns, fmt.Sprintf("%s-%05d", prefix, i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, blockCPU{}, err
	}
	took := time.Since(begin)
	after, err := roundCPU(operatorPID)
	return took, blockCPU{ControlPlane: after.ControlPlane - before.ControlPlane, Operator: after.Operator - before.Operator, Clients: after.Clients - before.Clients}, err
}

// roundCPU is the CPU time so far of the round's processes: the apiserver and etcd (this
// process's children but the operator's), the operator's (when operatorPID is not 0: it runs),
// and this one's.
func roundCPU(operatorPID int) (blockCPU, error) {
	children, err := cluster.ChildrenCPU()
	if err != nil {
		return blockCPU{}, err
	}
	var operator time.Duration
	if operatorPID != 0 {
		if operator, err = localcluster.CPUTime(operatorPID); err != nil {
			return blockCPU{}, err
		}
	}
	return blockCPU{ControlPlane: children - operator, Operator: operator, Clients: rusage(syscall.RUSAGE_SELF)}, nil
}

// assignPod is a pod of the benchmark, named name, in namespace ns.
func assignPod(ns, name string) *corev1.Pod {
	p := cluster.Pod(name, "assign")
	p.Namespace = ns
	return p
}

// checkAssignments checks every pod the round created: those of the labelled namespace have the
// profile's scheduler name and the annotation "assigned", those of the unlabelled one neither,
// those of the floor namespace only the floor policy's annotation.
func checkAssignments(ctx context.Context, cs kubernetes.Interface, o options, schedulerName string) error {
	want := len(assignPhases) * (o.assignPods + o.assignBatch*o.assignBlocks)
	if err := checkPods(ctx, cs, assignLabelled, want, func(p *corev1.Pod) bool {
		return p.Spec.SchedulerName == schedulerName && p.Annotations[v1alpha1.AnnotationAssignment] == "assigned"
	}); err != nil {
		return err
	}
	if err := checkPods(ctx, cs, assignUnlabelled, want, func(p *corev1.Pod) bool {
		_, annotated := p.Annotations[v1alpha1.AnnotationAssignment]
		return p.Spec.SchedulerName == v1alpha1.DefaultSchedulerName && !annotated
	}); err != nil {
		return err
	}
	return checkPods(ctx, cs, assignFloor, len(assignPhases)*o.assignBatch*o.assignBlocks, func(p *corev1.Pod) bool {
		_, annotated := p.Annotations[v1alpha1.AnnotationAssignment]
		return p.Spec.SchedulerName == v1alpha1.DefaultSchedulerName && !annotated && p.Annotations[floorAnnotation] == "true"
	})
}

// checkPods lists the pods of ns and checks that there are want of them, each ok.
func checkPods(ctx context.Context, cs kubernetes.Interface, ns string, want int, ok func(*corev1.Pod) bool) error {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	bad := 0
	var example *corev1.Pod
	for i := range list.Items {
		if !ok(&list.Items[i]) {
			bad++
			example = &list.Items[i]
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d pods of namespace %s are not as the policy should leave them, for example %s: schedulerName %q, annotation %q",
			bad, len(list.Items), ns, example.Name, example.Spec.SchedulerName, example.Annotations[v1alpha1.AnnotationAssignment])
	}
	if len(list.Items) != want {
		return fmt.Errorf("namespace %s has %d pods, want %d", ns, len(list.Items), want)
	}
	return nil
}
