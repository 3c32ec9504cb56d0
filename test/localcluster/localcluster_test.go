package localcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// TestLocalCluster starts the whole simulated control plane and checks the behaviour the end-to-end
// tier relies on: fake nodes become schedulable, the default scheduler binds pods, kwok runs them,
// the Deployment becomes Available, the garbage collector cleans up, and Stop leaves no process.
func TestLocalCluster(t *testing.T) {
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := localcluster.DefaultSchedulerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	began := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, SchedulerBinary: scheduler, WorkDir: t.TempDir()})
	if err != nil {
		// Missing binaries fail the test (with the make target to run): the e2e tier must not pass by skipping.
		t.Fatal(err)
	}
	t.Logf("control plane started in %s", time.Since(began).Round(10*time.Millisecond))
	// Stop is idempotent, so this only acts when the test ends early.
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})

	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	began = time.Now()
	if err := c.CreateNodes(ctx, []*corev1.Node{
		localcluster.FakeNode("node-a", nil, nil),
		localcluster.FakeNode("node-b", map[string]string{"zone": "b"}, nil),
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("2 fake nodes Ready and untainted in %s", time.Since(began).Round(10*time.Millisecond))

	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web",
					// Never pulled: kwok marks the pod Running without a kubelet.
					Image: "example.invalid/web:1",
				}}},
			},
		},
	}
	began = time.Now()
	if _, err := client.AppsV1().Deployments(deploy.Namespace).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, time.Minute, "2 pods bound by default-scheduler, Running and Ready, and the Deployment Available", func() error {
		pods, err := client.CoreV1().Pods(deploy.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		var running []string
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Spec.SchedulerName == corev1.DefaultSchedulerName &&
				p.Status.Phase == corev1.PodRunning && podReady(&p) {
				running = append(running, p.Name+"@"+p.Spec.NodeName)
			}
		}
		if len(running) != 2 {
			return fmt.Errorf("%d pods, bound, Running and Ready: %v", len(pods.Items), running)
		}
		d, err := client.AppsV1().Deployments(deploy.Namespace).Get(ctx, deploy.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("deployment has %d available replicas", d.Status.AvailableReplicas)
		}
		return nil
	})
	t.Logf("Deployment with 2 replicas Available in %s", time.Since(began).Round(10*time.Millisecond))

	began = time.Now()
	if err := client.AppsV1().Deployments(deploy.Namespace).Delete(ctx, deploy.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, time.Minute, "the garbage collector removed the ReplicaSet and its pods", func() error {
		rs, err := client.AppsV1().ReplicaSets(deploy.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		pods, err := client.CoreV1().Pods(deploy.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		if n := len(rs.Items) + len(pods.Items); n > 0 {
			return fmt.Errorf("%d ReplicaSets and %d pods left", len(rs.Items), len(pods.Items))
		}
		return nil
	})
	t.Logf("garbage collected in %s", time.Since(began).Round(10*time.Millisecond))

	procs := c.Processes()
	var total int
	var rss []string
	for _, p := range procs {
		kb := rssKiB(p.PID)
		total += kb
		rss = append(rss, fmt.Sprintf("%s %d MiB", p.Name, kb/1024))
	}
	t.Logf("RSS: %s; total %d MiB", strings.Join(rss, ", "), total/1024)

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Alive() {
			t.Errorf("%s (pid %d) still running after Stop", p.Name, p.PID)
		}
		if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: pid %d still exists after Stop (kill -0: %v)", p.Name, p.PID, err)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// eventually polls check until it succeeds, failing the test after timeout with the last error.
func eventually(ctx context.Context, t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("not %s within %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rssKiB returns the resident set size of pid from /proc/<pid>/status (0 if unreadable).
func rssKiB(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	return 0
}
