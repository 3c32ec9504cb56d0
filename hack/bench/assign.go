package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// assignProfile is the SchedulerProfile whose scheduler name the labelled namespace asks for.
	assignProfile = "assign"
	// assignLabelled, assignFloor and assignUnlabelled are the namespaces the assign benchmark
	// creates pods in: labelled with the profile's scheduler name; labelled for the floor
	// webhook (floorLabel); not labelled.
	assignLabelled   = "assign-labelled"
	assignFloor      = "assign-floor"
	assignUnlabelled = "assign-unlabelled"
)

// assignNamespaces are the namespaces whose rates of creates the assign benchmark compares, in
// the order of its blocks' Latin square.
var assignNamespaces = []string{assignLabelled, assignFloor, assignUnlabelled}

// assignResult is what one child of the assign benchmark measured.
type assignResult struct {
	// Load is the machine's load average over the minute before the round.
	Load float64
	// Rate is the pace at which Pods pods were created in the labelled namespace and as many in
	// the floor webhook's, in turns; Paced the lowest pace held in a turn, from its first create
	// to its last one's answer.
	Rate  float64
	Pods  int
	Paced float64
	// Reviews and FloorReviews are the durations of the reviews of those pods by the operator's
	// webhook and by the floor webhook, each timed at a proxy between the apiserver and the
	// webhook's server; Creates are those of the labelled namespace's creates, as their client
	// waited for them.
	Reviews, FloorReviews []time.Duration
	Creates               []time.Duration
	// Clients created Batch pods at once, per block, in each namespace in turn; Blocks are the
	// durations of each namespace's blocks, and CPU the CPU time spent in them.
	Clients, Batch int
	Blocks         map[string][]time.Duration
	CPU            map[string]blockCPU
}

// blockCPU is the user+system CPU time of the processes of a round in some of its blocks.
type blockCPU struct {
	// ControlPlane is the apiserver's and etcd's; Operator the operator's process's (the
	// operator and the floor webhook); Clients the benchmark's process's (the clients).
	ControlPlane, Operator, Clients time.Duration
}

// add adds the CPU of b.
func (c *blockCPU) add(b blockCPU) {
	c.ControlPlane += b.ControlPlane
	c.Operator += b.Operator
	c.Clients += b.Clients
}

// rate is the pods created per second in ns over all the blocks of the round.
func (r assignResult) rate(ns string) float64 {
	var total time.Duration
	for _, d := range r.Blocks[ns] {
		total += d
	}
	return float64(r.Batch*len(r.Blocks[ns])) / total.Seconds()
}

// cpuPerPod is the CPU per pod created in ns, in ms, of each kind.
func (r assignResult) cpuPerPod(ns string) (controlPlane, operator, clients float64) {
	n := float64(r.Batch * len(r.Blocks[ns]))
	c := r.CPU[ns]
	return ms(c.ControlPlane) / n, ms(c.Operator) / n, ms(c.Clients) / n
}

// benchAssign runs the assign benchmark: per round, one child process with an apiserver and an
// operator of its own.
func benchAssign(ctx context.Context, o options) ([]stats.Row, error) {
	if o.assignPods < 1 || o.assignRate <= 0 || o.assignClients < 1 || o.assignBatch < 1 || o.assignBlocks < 1 {
		return nil, fmt.Errorf("--assign-pods, --assign-rate, --assign-clients, --assign-batch and --assign-blocks must be positive")
	}
	var results []assignResult
	for round := range o.rounds {
		load, err := loadAverage()
		if err != nil {
			return nil, err
		}
		var r assignResult
		flags := func(out string) []string { return []string{"--assign-child", "--child-out=" + out} }
		if err := runChild(ctx, o, "assign.json", flags, &r); err != nil {
			return nil, fmt.Errorf("round %d: %w", round+1, err)
		}
		r.Load = load
		fmt.Printf("Round %d/%d  review p50 %.2f ms, p99 %.2f ms (floor webhook %.2f, %.2f) at %.1f creates/s (create p99 %.1f ms); created/s labelled %.0f, floor webhook %.0f, unlabelled %.0f; load %.1f\n",
			round+1, o.rounds, ms(percentileOf(r.Reviews, 50)), ms(percentileOf(r.Reviews, 99)), ms(percentileOf(r.FloorReviews, 50)), ms(percentileOf(r.FloorReviews, 99)), r.Paced, ms(percentileOf(r.Creates, 99)),
			r.rate(assignLabelled), r.rate(assignFloor), r.rate(assignUnlabelled), load)
		results = append(results, r)
	}
	return assignRows(results), nil
}

// assignRows summarizes the rounds: the webhook's p50 and p99 against the goal of p99 ≤ 5 ms;
// the rate of creates in the labelled namespace against the unlabelled one, round by round,
// against the goal of at least 0.95, and against the floor webhook's; the CPU per pod that
// explains the rates.
func assignRows(results []assignResult) []stats.Row {
	const name = "assign"
	p99 := stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.Reviews, 99)) })
	rates := map[string][]float64{}
	cpu := map[string][]float64{}
	for _, ns := range assignNamespaces {
		rates[ns] = stats.Each(results, func(r assignResult) float64 { return r.rate(ns) })
		cpu[ns] = stats.Each(results, func(r assignResult) float64 { cp, op, cl := r.cpuPerPod(ns); return cp + op + cl })
	}
	ratio := stats.Ratios(rates[assignLabelled], rates[assignUnlabelled])
	first := results[0]
	rows := []stats.Row{
		{Benchmark: name, Measure: fmt.Sprintf("webhook review p50, %d pods created at %.0f/s", first.Pods, first.Rate),
			Value: stats.Summarize(stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.Reviews, 50)) })), Unit: "ms", Decimals: 2,
			Note: "each review the apiserver sent for a pod of the labelled namespace, timed at a proxy before the operator's webhook server (TLS, HTTP, decode, the decision from the cache, encode; not the apiserver's part); the operator and the floor webhook in a process of their own, envtest; lowest creates/s held in a turn: " +
				stats.Format(1, stats.Each(results, func(r assignResult) float64 { return r.Paced })) + "; load average (1 min) before: " + stats.Format(1, stats.Each(results, func(r assignResult) float64 { return r.Load }))},
		{Benchmark: name, Measure: "  webhook review p99", Value: stats.Summarize(p99), Unit: "ms", Decimals: 2,
			Note: fmt.Sprintf("goal ≤ 5 ms: %s; rounds: %s", stats.Verdict(stats.Summarize(p99).Median <= 5), stats.Format(2, p99))},
		{Benchmark: name, Measure: "  floor webhook review p50", Value: stats.Summarize(stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.FloorReviews, 50)) })), Unit: "ms", Decimals: 2,
			Note: "as many pods in the floor webhook's namespace, at the same pace, in turns with the labelled one (labelled, floor, floor, labelled), timed the same way: what any webhook served in the operator's process shows"},
		{Benchmark: name, Measure: "  floor webhook review p99", Value: stats.Summarize(stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.FloorReviews, 99)) })), Unit: "ms", Decimals: 2,
			Note: "rounds: " + stats.Format(2, stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.FloorReviews, 99)) }))},
		{Benchmark: name, Measure: "  pod create through the apiserver p50", Value: stats.Summarize(stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.Creates, 50)) })), Unit: "ms", Decimals: 1,
			Note: "the labelled namespace's creates, as their client waited for them (apiserver, etcd, the webhook and the proxy)"},
		{Benchmark: name, Measure: "  pod create through the apiserver p99", Value: stats.Summarize(stats.Each(results, func(r assignResult) float64 { return ms(percentileOf(r.Creates, 99)) })), Unit: "ms", Decimals: 1},
		{Benchmark: name, Measure: fmt.Sprintf("pods created/s, labelled namespace, %d clients", first.Clients), Value: stats.Summarize(rates[assignLabelled]), Unit: "pods/s", Decimals: 0,
			Note: fmt.Sprintf("%d blocks of %d pods per namespace and round, the namespaces in turn; the apiserver calls the operator's webhook server; every pod checked for its scheduler name and annotation", len(first.Blocks[assignLabelled]), first.Batch)},
		{Benchmark: name, Measure: fmt.Sprintf("pods created/s, floor webhook, %d clients", first.Clients), Value: stats.Summarize(rates[assignFloor]), Unit: "pods/s", Decimals: 0,
			Note: "a webhook configured as the operator's, in its process, that decides nothing: reads the review, answers the same patch"},
		{Benchmark: name, Measure: fmt.Sprintf("pods created/s, unlabelled namespace, %d clients", first.Clients), Value: stats.Summarize(rates[assignUnlabelled]), Unit: "pods/s", Decimals: 0,
			Note: "no webhook is called (the namespaceSelectors)"},
		{Benchmark: name, Measure: "  labelled / unlabelled", Value: stats.Summarize(ratio), Decimals: 2,
			Note: stats.Goal(stats.Summarize(ratio).Median, 0.95) + "; rounds: " + stats.Format(2, ratio)},
	}
	for _, c := range []struct{ measure, num, den string }{
		{"  labelled / floor webhook", assignLabelled, assignFloor},
		{"  floor webhook / unlabelled", assignFloor, assignUnlabelled},
	} {
		r := stats.Ratios(rates[c.num], rates[c.den])
		rows = append(rows, stats.Row{Benchmark: name, Measure: c.measure, Value: stats.Summarize(r), Decimals: 2, Note: "rounds: " + stats.Format(2, r)})
	}
	for i, c := range []struct{ measure, ns string }{
		{"CPU per pod, labelled namespace", assignLabelled},
		{"CPU per pod, floor webhook", assignFloor},
		{"CPU per pod, unlabelled namespace", assignUnlabelled},
	} {
		row := stats.Row{Benchmark: name, Measure: c.measure, Value: stats.Summarize(cpu[c.ns]), Unit: "ms", Decimals: 2}
		controlPlane := stats.Each(results, func(r assignResult) float64 { cp, _, _ := r.cpuPerPod(c.ns); return cp })
		operator := stats.Each(results, func(r assignResult) float64 { _, op, _ := r.cpuPerPod(c.ns); return op })
		row.Note = "apiserver and etcd: " + stats.Format(2, controlPlane) + "; operator's process: " + stats.Format(2, operator)
		if i == 0 {
			row.Note = "user+system of the apiserver, etcd, the operator's process (operator, floor webhook) and the clients in the namespace's blocks / pods; " + row.Note
		}
		rows = append(rows, row)
	}
	for _, c := range []struct{ measure, num, den string }{
		{"  labelled / unlabelled (CPU)", assignLabelled, assignUnlabelled},
		{"  labelled / floor webhook (CPU)", assignLabelled, assignFloor},
	} {
		r := stats.Ratios(cpu[c.num], cpu[c.den])
		rows = append(rows, stats.Row{Benchmark: name, Measure: c.measure, Value: stats.Summarize(r), Decimals: 2, Note: "rounds: " + stats.Format(2, r)})
	}
	return rows
}

// assignChild is one round of the assign benchmark, in a child process: an envtest apiserver;
// the operator with its webhooks, and the floor webhook, in a process of their own, so that the
// benchmark's clients share neither their Go runtime nor their garbage collector; an Available
// profile; a namespace labelled with its scheduler name, one served by the floor webhook and one
// not labelled. It measures the rate of creates in the namespaces in turn, then the webhooks'
// latency at a steady pace of creates, and checks that every pod of the labelled namespace was
// assigned, every pod of the floor's patched, and none of the unlabelled namespace touched.
func assignChild(ctx context.Context, o options) error {
	c, err := cluster.StartWithWebhooks(o.assets, filepath.Join(o.dir, "assign"), []string{o.webhooks}, o.crds)
	if err != nil {
		return err
	}
	defer c.Stop()
	admin, err := client.New(c.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	operator, err := startAssignOperator(ctx, c, admin, o)
	if err != nil {
		return err
	}
	defer operator.stop()
	schedulerName, err := availableProfile(ctx, admin, testutil.MakeProfile(assignProfile).Obj())
	if err != nil {
		return err
	}
	if schedulerName != assignProfile {
		return fmt.Errorf("SchedulerProfile %s has scheduler name %s, not the one the floor webhook assigns", assignProfile, schedulerName)
	}
	if err := installFloorWebhook(ctx, admin, operator.FloorAddr, c.WebhookCA()); err != nil {
		return err
	}
	if err := createAssignNamespaces(ctx, admin, schedulerName); err != nil {
		return err
	}
	r := assignResult{Rate: o.assignRate, Pods: o.assignPods, Clients: o.assignClients, Batch: o.assignBatch}
	if err := createBlocks(ctx, c.Client, o, operator.pid(), &r); err != nil {
		return err
	}
	if err := timeReviews(ctx, c, admin, o, operator.FloorAddr, &r); err != nil {
		return err
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

// startAssignOperator starts the operator, with its webhooks served where the cluster's webhook
// configurations call and the floor webhook, in a process of its own, and waits until the
// apiserver calls its webhooks.
func startAssignOperator(ctx context.Context, c *cluster.Cluster, admin client.Client, o options) (*operatorProc, error) {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	host, port, certDir := c.Webhook()
	op, err := startOperatorProcess(ctx, c, admin, o, "assign", operatorProcess{
		Webhook:   &controllers.WebhookOptions{Host: host, Port: port, CertDir: certDir},
		FloorAddr: net.JoinHostPort(host, strconv.Itoa(ports[0])), SchedulerName: assignProfile,
	})
	if err != nil {
		return nil, err
	}
	if err := waitWebhook(ctx, admin); err != nil {
		op.stop()
		return nil, err
	}
	return op, nil
}

// createAssignNamespaces creates the benchmark's namespaces and waits until the pods of the
// labelled one and of the floor's are patched.
func createAssignNamespaces(ctx context.Context, admin client.Client, schedulerName string) error {
	labels := map[string]map[string]string{
		assignLabelled: {v1alpha1.LabelAssignSchedulerName: schedulerName},
		assignFloor:    {floorLabel: "true"},
	}
	for _, ns := range assignNamespaces {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels[ns]}}); err != nil {
			return err
		}
	}
	for _, ns := range []string{assignLabelled, assignFloor} {
		if err := waitAssigned(ctx, admin, ns, func() bool { return true }); err != nil {
			return fmt.Errorf("waiting for the pods of namespace %s to be patched: %w", ns, err)
		}
	}
	return nil
}

// checkAssignments checks every pod the round created: those of the labelled namespace and of
// the floor's have the profile's scheduler name and the annotation "assigned", those of the
// unlabelled one neither.
func checkAssignments(ctx context.Context, cs kubernetes.Interface, o options, schedulerName string) error {
	blocks := o.assignBatch * o.assignBlocks
	assigned := func(p *corev1.Pod) bool {
		return p.Spec.SchedulerName == schedulerName && p.Annotations[v1alpha1.AnnotationAssignment] == "assigned"
	}
	if err := checkPods(ctx, cs, assignLabelled, blocks+o.assignPods, assigned); err != nil {
		return err
	}
	if err := checkPods(ctx, cs, assignFloor, blocks+o.assignPods, assigned); err != nil {
		return err
	}
	return checkPods(ctx, cs, assignUnlabelled, blocks, func(p *corev1.Pod) bool {
		_, annotated := p.Annotations[v1alpha1.AnnotationAssignment]
		return p.Spec.SchedulerName == v1alpha1.DefaultSchedulerName && !annotated
	})
}

// waitAssigned creates dry-run pods in ns until one is assigned (in the labelled namespace: the
// operator's cache holds the namespace and the Available profile) and done.
func waitAssigned(ctx context.Context, admin client.Client, ns string, done func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod := testutil.MakePod("probe", ns).Obj()
		if err := admin.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, err
		}
		return pod.Annotations[v1alpha1.AnnotationAssignment] == "assigned" && done(), nil
	})
}

// createBlocks creates o.assignBlocks blocks of o.assignBatch pods in each namespace, as fast as
// o.assignClients clients can, the namespaces in turn in the order of a balanced Latin square,
// and records each block's duration and CPU.
func createBlocks(ctx context.Context, cs kubernetes.Interface, o options, operatorPID int, r *assignResult) error {
	r.Blocks, r.CPU = map[string][]time.Duration{}, map[string]blockCPU{}
	for b := range o.assignBlocks {
		for _, i := range order(len(assignNamespaces), b) {
			ns := assignNamespaces[i]
			took, cpu, err := createBlock(ctx, cs, o, operatorPID, ns, fmt.Sprintf("block-%02d", b))
			if err != nil {
				return fmt.Errorf("creating pods in %s: %w", ns, err)
			}
			r.Blocks[ns] = append(r.Blocks[ns], took)
			total := r.CPU[ns]
			total.add(cpu)
			r.CPU[ns] = total
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
// process's children but the operator's), the operator's, and this one's.
func roundCPU(operatorPID int) (blockCPU, error) {
	children, err := cluster.ChildrenCPU()
	if err != nil {
		return blockCPU{}, err
	}
	operator, err := localcluster.CPUTime(operatorPID)
	if err != nil {
		return blockCPU{}, err
	}
	return blockCPU{ControlPlane: children - operator, Operator: operator, Clients: rusage(syscall.RUSAGE_SELF)}, nil
}

// timeReviews points the pod assignment webhook and the floor webhook at timing proxies and
// creates o.assignPods pods in each of their namespaces at o.assignRate per second, in four
// turns of half of them (labelled, floor, floor, labelled), so that a slow phase of the machine
// falls on both; each pod must have been reviewed once.
func timeReviews(ctx context.Context, c *cluster.Cluster, admin client.Client, o options, floorAddr string, r *assignResult) error {
	host, port, certDir := c.Webhook()
	ours, err := startTimingProxy(host, "https://"+net.JoinHostPort(host, strconv.Itoa(port)), certDir, c.WebhookCA())
	if err != nil {
		return err
	}
	defer ours.stop()
	floor, err := startTimingProxy(host, "https://"+floorAddr, certDir, c.WebhookCA())
	if err != nil {
		return err
	}
	defer floor.stop()
	if err := callThrough(ctx, admin, podAssignerWebhook, assignLabelled, ours); err != nil {
		return err
	}
	if err := callThrough(ctx, admin, floorWebhookConfig, assignFloor, floor); err != nil {
		return err
	}
	half := o.assignPods / 2
	for turn, t := range []struct {
		ns string
		n  int
	}{{assignLabelled, half}, {assignFloor, half}, {assignFloor, o.assignPods - half}, {assignLabelled, o.assignPods - half}} {
		took, paced, err := pacedCreates(ctx, c.Client, t.ns, fmt.Sprintf("paced-%d", turn), t.n, o.assignRate)
		if err != nil {
			return fmt.Errorf("creating pods in %s at a pace: %w", t.ns, err)
		}
		if t.ns == assignLabelled {
			r.Creates = append(r.Creates, took...)
		}
		if r.Paced == 0 || paced < r.Paced {
			r.Paced = paced
		}
	}
	r.Reviews, r.FloorReviews = ours.take(), floor.take()
	if len(r.Reviews) != o.assignPods || len(r.FloorReviews) != o.assignPods {
		return fmt.Errorf("the proxies timed %d reviews of the operator's webhook and %d of the floor webhook for %d pods each", len(r.Reviews), len(r.FloorReviews), o.assignPods)
	}
	return nil
}

// pacedCreates creates n pods named prefix-<i> in ns at rate per second, each when its time
// comes whether the ones before have returned or not, and returns how long each took and the
// pace held.
func pacedCreates(ctx context.Context, cs kubernetes.Interface, ns, prefix string, n int, rate float64) ([]time.Duration, float64, error) {
	interval := time.Duration(float64(time.Second) / rate)
	took := make([]time.Duration, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			start := time.Now()
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, assignPod(ns, fmt.Sprintf("%s-%05d", prefix, i)), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	paced := float64(n) / time.Since(begin).Seconds()
	close(errs)
	if err := errors.Join(ctx.Err(), <-errs); err != nil {
		return nil, 0, err
	}
	return took, paced, nil
}

// assignPod is a pod of the benchmark, named name, in namespace ns.
func assignPod(ns, name string) *corev1.Pod {
	p := cluster.Pod(name, "assign")
	p.Namespace = ns
	return p
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
		return fmt.Errorf("%d of %d pods of namespace %s are not as the webhook should leave them, for example %s: schedulerName %q, annotation %q",
			bad, len(list.Items), ns, example.Name, example.Spec.SchedulerName, example.Annotations[v1alpha1.AnnotationAssignment])
	}
	if len(list.Items) != want {
		return fmt.Errorf("namespace %s has %d pods, want %d", ns, len(list.Items), want)
	}
	return nil
}
