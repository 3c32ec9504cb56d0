package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

const (
	// assignProfile is the SchedulerProfile whose scheduler name the labelled namespace asks for.
	assignProfile = "assign"
	// assignLabelled and assignUnlabelled are the namespaces the assign benchmark creates pods in.
	assignLabelled   = "assign-labelled"
	assignUnlabelled = "assign-unlabelled"
)

// assignResult is what one child of the assign benchmark measured.
type assignResult struct {
	// Rate is the pace at which Pods pods were created in the labelled namespace; Paced the pace
	// held, from the first create to the last one's answer.
	Rate  float64
	Pods  int
	Paced float64
	// Reviews are the durations of the webhook's reviews of those pods, timed at a proxy between
	// the apiserver and the operator's webhook server; Creates those of the creates, as their
	// client waited for them.
	Reviews []time.Duration
	Creates []time.Duration
	// Clients created Batch pods at once, per block, alternating between the namespaces;
	// Labelled and Unlabelled are the durations of each namespace's blocks.
	Clients, Batch       int
	Labelled, Unlabelled []time.Duration
	// LabelledCPU and UnlabelledCPU are the CPU time of the apiserver and etcd (ControlPlane)
	// and of this process (Process: the operator and the clients) in each namespace's blocks.
	LabelledCPU, UnlabelledCPU blockCPU
}

// blockCPU is the user+system CPU time of the processes of a round in some of its blocks.
type blockCPU struct {
	ControlPlane, Process time.Duration
}

// perPod is the CPU of both kinds per pod of blocks blocks of batch pods, in ms.
func (c blockCPU) perPod(batch, blocks int) (controlPlane, process float64) {
	n := float64(batch * blocks)
	return ms(c.ControlPlane) / n, ms(c.Process) / n
}

// labelledRate and unlabelledRate are the pods created per second in each namespace over all
// the blocks of the round.
func (r assignResult) labelledRate() float64   { return rate(r.Batch, r.Labelled) }
func (r assignResult) unlabelledRate() float64 { return rate(r.Batch, r.Unlabelled) }

func rate(batch int, blocks []time.Duration) float64 {
	var total time.Duration
	for _, d := range blocks {
		total += d
	}
	return float64(batch*len(blocks)) / total.Seconds()
}

// benchAssign runs the assign benchmark: per round, one child process with an apiserver and the
// operator of its own.
func benchAssign(ctx context.Context, o options) ([]stats.Row, error) {
	if o.assignPods < 1 || o.assignRate <= 0 || o.assignClients < 1 || o.assignBatch < 1 || o.assignBlocks < 1 {
		return nil, fmt.Errorf("--assign-pods, --assign-rate, --assign-clients, --assign-batch and --assign-blocks must be positive")
	}
	var results []assignResult
	for round := range o.rounds {
		var r assignResult
		flags := func(out string) []string { return []string{"--assign-child", "--child-out=" + out} }
		if err := runChild(ctx, o, "assign.json", flags, &r); err != nil {
			return nil, fmt.Errorf("round %d: %w", round+1, err)
		}
		fmt.Printf("Round %d/%d  review p50 %.2f ms, p99 %.2f ms at %.1f creates/s (create p99 %.1f ms); created/s labelled %.0f, unlabelled %.0f: %.3f\n",
			round+1, o.rounds, ms(percentileOf(r.Reviews, 50)), ms(percentileOf(r.Reviews, 99)), r.Paced, ms(percentileOf(r.Creates, 99)),
			r.labelledRate(), r.unlabelledRate(), r.labelledRate()/r.unlabelledRate())
		results = append(results, r)
	}
	return assignRows(results), nil
}

// assignRows summarizes the rounds: the webhook's p50 and p99 against the goal of p99 ≤ 5 ms,
// and the rate of creates in the labelled namespace against the unlabelled one, round by round,
// against the goal of at least 0.95.
func assignRows(results []assignResult) []stats.Row {
	const name = "assign"
	each := func(f func(assignResult) float64) []float64 {
		v := make([]float64, len(results))
		for i, r := range results {
			v[i] = f(r)
		}
		return v
	}
	p50 := each(func(r assignResult) float64 { return ms(percentileOf(r.Reviews, 50)) })
	p99 := each(func(r assignResult) float64 { return ms(percentileOf(r.Reviews, 99)) })
	create50 := each(func(r assignResult) float64 { return ms(percentileOf(r.Creates, 50)) })
	create99 := each(func(r assignResult) float64 { return ms(percentileOf(r.Creates, 99)) })
	paced := each(func(r assignResult) float64 { return r.Paced })
	labelled := each(assignResult.labelledRate)
	unlabelled := each(assignResult.unlabelledRate)
	ratios := stats.Ratios(labelled, unlabelled)
	first := results[0]
	cpu := func(c func(assignResult) blockCPU, controlPlane bool) []float64 {
		return each(func(r assignResult) float64 {
			cp, p := c(r).perPod(r.Batch, len(r.Labelled))
			if controlPlane {
				return cp
			}
			return p
		})
	}
	labelledCPU := func(r assignResult) blockCPU { return r.LabelledCPU }
	unlabelledCPU := func(r assignResult) blockCPU { return r.UnlabelledCPU }
	cpuRatios := each(func(r assignResult) float64 {
		lcp, lp := r.LabelledCPU.perPod(r.Batch, len(r.Labelled))
		ucp, up := r.UnlabelledCPU.perPod(r.Batch, len(r.Unlabelled))
		return (lcp + lp) / (ucp + up)
	})
	return []stats.Row{
		{Benchmark: name, Measure: fmt.Sprintf("webhook review p50, %d pods created at %.0f/s", first.Pods, first.Rate), Value: stats.Summarize(p50), Unit: "ms", Decimals: 2,
			Note: "each review the apiserver sent for a pod of a labelled namespace, timed at a proxy before the operator's webhook server (TLS, HTTP, decode, the decision from the cache, encode; not the apiserver's own part); operator in a child process, envtest; creates/s held: " + stats.Format(1, paced)},
		{Benchmark: name, Measure: "  webhook review p99", Value: stats.Summarize(p99), Unit: "ms", Decimals: 2,
			Note: fmt.Sprintf("goal ≤ 5 ms: %s; rounds: %s", stats.Verdict(stats.Summarize(p99).Median <= 5), stats.Format(2, p99))},
		{Benchmark: name, Measure: "  pod create through the apiserver p50", Value: stats.Summarize(create50), Unit: "ms", Decimals: 1,
			Note: "the same creates as their client waited for them (apiserver, etcd, the webhook and the proxy)"},
		{Benchmark: name, Measure: "  pod create through the apiserver p99", Value: stats.Summarize(create99), Unit: "ms", Decimals: 1},
		{Benchmark: name, Measure: fmt.Sprintf("pods created/s, labelled namespace, %d clients", first.Clients), Value: stats.Summarize(labelled), Unit: "pods/s", Decimals: 0,
			Note: fmt.Sprintf("%d blocks of %d pods per namespace and round, alternating; the apiserver calls the operator's webhook server directly; every pod checked for its scheduler name and annotation", len(first.Labelled), first.Batch)},
		{Benchmark: name, Measure: fmt.Sprintf("pods created/s, unlabelled namespace, %d clients", first.Clients), Value: stats.Summarize(unlabelled), Unit: "pods/s", Decimals: 0,
			Note: "the webhook's namespaceSelector keeps these from the webhook"},
		{Benchmark: name, Measure: "  labelled / unlabelled", Value: stats.Summarize(ratios), Decimals: 2,
			Note: stats.Goal(stats.Summarize(ratios).Median, 0.95) + "; rounds: " + stats.Format(2, ratios)},
		{Benchmark: name, Measure: "CPU per pod, labelled: apiserver and etcd", Value: stats.Summarize(cpu(labelledCPU, true)), Unit: "ms", Decimals: 2,
			Note: "user+system over the blocks of the namespace / pods created"},
		{Benchmark: name, Measure: "CPU per pod, labelled: operator and clients", Value: stats.Summarize(cpu(labelledCPU, false)), Unit: "ms", Decimals: 2,
			Note: "the child process: the operator with its webhook server, and the clients creating the pods"},
		{Benchmark: name, Measure: "CPU per pod, unlabelled: apiserver and etcd", Value: stats.Summarize(cpu(unlabelledCPU, true)), Unit: "ms", Decimals: 2},
		{Benchmark: name, Measure: "CPU per pod, unlabelled: operator and clients", Value: stats.Summarize(cpu(unlabelledCPU, false)), Unit: "ms", Decimals: 2},
		{Benchmark: name, Measure: "  labelled / unlabelled (CPU, all three processes)", Value: stats.Summarize(cpuRatios), Decimals: 2,
			Note: "rounds: " + stats.Format(2, cpuRatios)},
	}
}

// assignChild is one round of the assign benchmark, in a child process: the operator with its
// webhooks on an envtest apiserver, an Available profile, a namespace labelled with its scheduler
// name and one not labelled. It measures the creation rate in both namespaces, alternating, then
// the webhook's latency at a steady pace of creates, and checks that every pod of the labelled
// namespace was assigned and none of the other.
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
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	opts := operatorOptions()
	host, port, certDir := c.Webhook()
	opts.Webhook = &controllers.WebhookOptions{Host: host, Port: port, CertDir: certDir}
	stop, err := startOperatorWith(ctx, c.Config, opts)
	if err != nil {
		return err
	}
	defer stop()
	if err := waitWebhook(ctx, admin); err != nil {
		return err
	}
	schedulerName, err := availableProfile(ctx, admin)
	if err != nil {
		return err
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: assignLabelled, Labels: map[string]string{v1alpha1.LabelAssignSchedulerName: schedulerName}}},
		{ObjectMeta: metav1.ObjectMeta{Name: assignUnlabelled}},
	} {
		if err := admin.Create(ctx, ns); err != nil {
			return err
		}
	}
	if err := waitAssigned(ctx, admin, func() bool { return true }); err != nil {
		return fmt.Errorf("waiting for the webhook to assign the labelled namespace's pods: %w", err)
	}
	r := assignResult{Rate: o.assignRate, Pods: o.assignPods, Clients: o.assignClients, Batch: o.assignBatch}
	if err := createBlocks(ctx, c.Client, o, &r); err != nil {
		return err
	}
	proxy, err := startTimingProxy(host, fmt.Sprintf("https://%s", net.JoinHostPort(host, fmt.Sprint(port))), certDir, c.WebhookCA())
	if err != nil {
		return err
	}
	defer proxy.stop()
	if err := callThrough(ctx, admin, proxy); err != nil {
		return err
	}
	if err := pacedCreates(ctx, c.Client, o, &r); err != nil {
		return err
	}
	if r.Reviews = proxy.take(); len(r.Reviews) != o.assignPods {
		return fmt.Errorf("the proxy timed %d reviews for %d pods created at a pace", len(r.Reviews), o.assignPods)
	}
	created := o.assignBatch*o.assignBlocks + o.assignPods
	if err := checkAssigned(ctx, c.Client, assignLabelled, created, func(p *corev1.Pod) bool {
		return p.Spec.SchedulerName == schedulerName && p.Annotations[v1alpha1.AnnotationAssignment] == "assigned"
	}); err != nil {
		return err
	}
	if err := checkAssigned(ctx, c.Client, assignUnlabelled, o.assignBatch*o.assignBlocks, func(p *corev1.Pod) bool {
		_, annotated := p.Annotations[v1alpha1.AnnotationAssignment]
		return p.Spec.SchedulerName == v1alpha1.DefaultSchedulerName && !annotated
	}); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.childOut, data, 0o644)
}

// availableProfile creates a profile, marks its Deployment available as the Deployment
// controller (absent in envtest) would, waits until the profile is Available and returns its
// scheduler name.
func availableProfile(ctx context.Context, admin client.Client) (string, error) {
	if err := admin.Create(ctx, testutil.MakeProfile(assignProfile).Obj()); err != nil {
		return "", err
	}
	p := &v1alpha1.SchedulerProfile{}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Name: assignProfile}, p); err != nil {
			return false, err
		}
		switch {
		case meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionAvailable):
			return true, nil
		case p.Status.DeploymentName != "":
			return false, testutil.MarkDeploymentAvailable(ctx, admin, client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName})
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for SchedulerProfile %s to be Available: %w", assignProfile, err)
	}
	return p.Status.SchedulerName, nil
}

// waitAssigned creates dry-run pods in the labelled namespace until one is assigned (the
// operator's cache holds the namespace and the Available profile) and done.
func waitAssigned(ctx context.Context, admin client.Client, done func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod := testutil.MakePod("probe", assignLabelled).Obj()
		if err := admin.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, err
		}
		return pod.Annotations[v1alpha1.AnnotationAssignment] == "assigned" && done(), nil
	})
}

// createBlocks creates o.assignBlocks blocks of o.assignBatch pods in each namespace, as fast as
// o.assignClients clients can, alternating between the namespaces (labelled first in one block,
// second in the next), and records each block's duration and CPU.
func createBlocks(ctx context.Context, cs kubernetes.Interface, o options, r *assignResult) error {
	for b := range o.assignBlocks {
		namespaces := []string{assignLabelled, assignUnlabelled}
		if b%2 == 1 {
			namespaces = []string{assignUnlabelled, assignLabelled}
		}
		for _, ns := range namespaces {
			took, cpu, err := createBlock(ctx, cs, o, ns, fmt.Sprintf("block-%02d", b))
			if err != nil {
				return fmt.Errorf("creating pods in %s: %w", ns, err)
			}
			blocks, total := &r.Unlabelled, &r.UnlabelledCPU
			if ns == assignLabelled {
				blocks, total = &r.Labelled, &r.LabelledCPU
			}
			*blocks = append(*blocks, took)
			total.ControlPlane += cpu.ControlPlane
			total.Process += cpu.Process
		}
	}
	return nil
}

// createBlock creates o.assignBatch pods named prefix-<i> in ns with o.assignClients clients,
// and returns how long it took and the CPU the processes spent meanwhile.
func createBlock(ctx context.Context, cs kubernetes.Interface, o options, ns, prefix string) (time.Duration, blockCPU, error) {
	controlPlane0, err := cluster.ChildrenCPU()
	if err != nil {
		return 0, blockCPU{}, err
	}
	process0, begin := rusage(syscall.RUSAGE_SELF), time.Now()
	err = cluster.ParallelN(ctx, o.assignClients, o.assignBatch, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, assignPod(ns, fmt.Sprintf("%s-%05d", prefix, i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, blockCPU{}, err
	}
	took, process := time.Since(begin), rusage(syscall.RUSAGE_SELF)-process0
	controlPlane, err := cluster.ChildrenCPU()
	return took, blockCPU{ControlPlane: controlPlane - controlPlane0, Process: process}, err
}

// pacedCreates creates o.assignPods pods in the labelled namespace at o.assignRate per second,
// each when its time comes whether the ones before have returned or not, and records how long
// each took and the pace held.
func pacedCreates(ctx context.Context, cs kubernetes.Interface, o options, r *assignResult) error {
	interval := time.Duration(float64(time.Second) / o.assignRate)
	took := make([]time.Duration, o.assignPods)
	errs := make(chan error, o.assignPods)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range o.assignPods {
		if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			start := time.Now()
			if _, err := cs.CoreV1().Pods(assignLabelled).Create(ctx, assignPod(assignLabelled, fmt.Sprintf("paced-%05d", i)), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	r.Paced = float64(o.assignPods) / time.Since(begin).Seconds()
	close(errs)
	if err := errors.Join(ctx.Err(), <-errs); err != nil {
		return fmt.Errorf("creating pods at a pace: %w", err)
	}
	r.Creates = took
	return nil
}

// assignPod is a pod of the benchmark, named name, in namespace ns.
func assignPod(ns, name string) *corev1.Pod {
	p := cluster.Pod(name, "assign")
	p.Namespace = ns
	return p
}

// checkAssigned lists the pods of ns and checks that there are want of them, each ok.
func checkAssigned(ctx context.Context, cs kubernetes.Interface, ns string, want int, ok func(*corev1.Pod) bool) error {
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

// callThrough points the pod assignment webhook's configuration at proxy, waits until the
// apiserver calls it there, and forgets the reviews of that wait.
func callThrough(ctx context.Context, admin client.Client, proxy *timingProxy) error {
	var list admissionregistrationv1.MutatingWebhookConfigurationList
	if err := admin.List(ctx, &list); err != nil {
		return err
	}
	found := false
	for i := range list.Items {
		cfg := &list.Items[i]
		for j := range cfg.Webhooks {
			w := &cfg.Webhooks[j]
			if w.ClientConfig.URL == nil {
				continue
			}
			u, err := url.Parse(*w.ClientConfig.URL)
			if err != nil {
				return err
			}
			if !strings.HasSuffix(u.Path, webhooks.PodAssignerPath) {
				continue
			}
			u.Host = proxy.addr
			w.ClientConfig.URL = ptr.To(u.String())
			if err := admin.Update(ctx, cfg); err != nil {
				return err
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no webhook of path %s called by URL among the MutatingWebhookConfigurations", webhooks.PodAssignerPath)
	}
	if err := waitAssigned(ctx, admin, func() bool { return len(proxy.take()) > 0 }); err != nil {
		return fmt.Errorf("waiting for the apiserver to call the webhook through the timing proxy: %w", err)
	}
	_ = proxy.take()
	return nil
}

// timingProxy serves TLS where the apiserver calls the pod assignment webhook, forwards each
// request to the operator's webhook server, and times the round trip there: the webhook as the
// apiserver sees it, less the apiserver's side of the call.
type timingProxy struct {
	addr     string
	upstream string
	client   *http.Client
	server   *http.Server

	mu   sync.Mutex
	took []time.Duration
}

// startTimingProxy serves on a free port of host with the certificate of certDir, forwarding to
// upstream, whose certificate ca signed.
func startTimingProxy(host, upstream, certDir string, ca []byte) (*timingProxy, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA certificate for the webhook")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	p := &timingProxy{addr: l.Addr().String(), upstream: upstream,
		// HTTP/2 with kept-alive connections, as the apiserver calls a webhook.
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64}}}
	p.server = &http.Server{Handler: p, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.server.ServeTLS(l, "", "") }()
	return p, nil
}

// ServeHTTP forwards one review and records how long the webhook server took to answer it whole.
func (p *timingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	_ = resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.took = append(p.took, took)
	p.mu.Unlock()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// take returns the durations recorded since the last take.
func (p *timingProxy) take() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	took := p.took
	p.took = nil
	return took
}

func (p *timingProxy) stop() { _ = p.server.Close() }
