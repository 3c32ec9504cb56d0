package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestSchedulerRunsAsItsServiceAccount: the scheduler holds only a token of the ServiceAccount
// the operator made for it, and with the RBAC the operator granted it takes its lease, binds pods,
// and authenticates and authorizes requests to its secure port through the apiserver (TokenReview
// and SubjectAccessReview, which need the auth reader RoleBinding and system:kube-scheduler).
func TestSchedulerRunsAsItsServiceAccount(t *testing.T) {
	nodes := makeNodes(t, "asself", nodeSpec{name: "a", cpus: 4})
	p := applyProfile(t, `{metadata: {name: e2e-asself}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)
	schedule(t, nodes.pod("bound", "e2e-asself", 100))

	reps := runner.Replicas(p.Status.DeploymentName)
	if len(reps) != 1 {
		t.Fatalf("%d scheduler processes, want 1", len(reps))
	}
	rep := reps[0]
	wantUser := "system:serviceaccount:" + operatorNamespace + ":" + p.Status.DeploymentName
	if got := kubeconfigUser(t, rep.Kubeconfig); got != wantUser {
		t.Errorf("the scheduler's token authenticates as %q, want %q", got, wantUser)
	}
	lease := &coordinationv1.Lease{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: profile.LeaseName(p.Status.SchedulerName)}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("lease %s has no holder: the scheduler could not take its own lease", lease.Name)
	}

	reader := serviceAccountToken(t, "e2e-metrics-reader", "system:monitoring")
	for _, c := range []struct {
		who, token string
		want       int
	}{
		{"a ServiceAccount bound to system:monitoring", reader, http.StatusOK},
		{"the scheduler's own ServiceAccount, which may not read /metrics", schedulerToken(t, rep), http.StatusForbidden},
		{"a token the apiserver never issued", "not-a-token", http.StatusUnauthorized},
	} {
		if got := getMetrics(t, rep.Port, c.token); got != c.want {
			t.Errorf("GET /metrics as %s: status %d, want %d", c.who, got, c.want)
		}
	}
	assertNoAccessErrors(t, rep)
}

// TestLeaderFailover: of two replicas one holds the lease; when it is killed without releasing
// the lease, another takes the lease once it expires and binds new pods.
func TestLeaderFailover(t *testing.T) {
	nodes := makeNodes(t, "failover", nodeSpec{name: "a", cpus: 4})
	p := applyProfile(t, `{metadata: {name: e2e-failover}, spec: {scheduler: {replicas: 2}}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitReplicas(t, p.Status.DeploymentName, p.Status.ConfigHash, 2)
	schedule(t, nodes.pod("before", "e2e-failover", 100))
	leader := leaderOf(t, p.Status.DeploymentName)
	holder := leaseHolder(t, profile.LeaseName(p.Status.SchedulerName))

	if err := syscall.Kill(leader.Process.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	pod := nodes.pod("after", "e2e-failover", 100)
	if err := k8s.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	waitBound(t, pod)
	took := time.Since(killed)
	newHolder := leaseHolder(t, profile.LeaseName(p.Status.SchedulerName))
	t.Logf("Killed the leader %s (pid %d); %s took the lease and a new pod was bound %s later",
		leader.Process.Name, leader.Process.PID, newHolder, took.Round(100*time.Millisecond))
	if newHolder == holder {
		t.Errorf("the lease is still held by the killed leader %s", holder)
	}
	// The lease expires 15 s after the killed leader's last renewal (at most 2 s before the kill);
	// a standby tries again every 2 to 4.4 s (retry period with jitter). 30 s leaves room for a
	// loaded machine without hiding a standby that never takes over.
	if took > 30*time.Second {
		t.Errorf("the new pod was bound %s after the leader was killed, want within 30 s", took)
	}
}

// waitReplicas waits until the runner runs n ready processes of a Deployment with hash.
func waitReplicas(t *testing.T, deployment, hash string, n int) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, fmt.Sprintf("%d ready schedulers of %s", n, deployment), func(context.Context) error {
		reps := runner.Replicas(deployment)
		ready := 0
		for _, rep := range reps {
			if rep.Hash == hash && rep.Ready {
				ready++
			}
		}
		if ready != n || len(reps) != n {
			return fmt.Errorf("%d processes, %d ready with config %s", len(reps), ready, hash)
		}
		return nil
	})
}

// leaderOf returns the process of a Deployment that logged taking the lease. kube-scheduler names
// itself in the lease by host name and a random UID, which is the same host for every process here.
func leaderOf(t *testing.T, deployment string) schedrunner.Replica {
	t.Helper()
	var leader schedrunner.Replica
	testutil.Eventually(t, 30*time.Second, "a leader among the schedulers of "+deployment, func(context.Context) error {
		for _, rep := range runner.Replicas(deployment) {
			if data, err := os.ReadFile(rep.Process.Log); err == nil && strings.Contains(string(data), "Successfully acquired lease") {
				leader = rep
				return nil
			}
		}
		return fmt.Errorf("no process logged taking the lease")
	})
	return leader
}

// leaseHolder returns the holder of a scheduler's lease in the operator's namespace.
func leaseHolder(t *testing.T, name string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// kubeconfigUser checks that a kubeconfig carries a bearer token and no client certificate (the
// admin's credential is one), and returns the user that the apiserver authenticates the token as.
func kubeconfigUser(t *testing.T, path string) string {
	t.Helper()
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(config.AuthInfos) != 1 {
		t.Fatalf("%s has %d users, want 1", path, len(config.AuthInfos))
	}
	for name, user := range config.AuthInfos {
		if user.Token == "" || user.TokenFile != "" || len(user.ClientCertificateData) > 0 || user.ClientCertificate != "" || user.Username != "" {
			t.Fatalf("user %s of %s: want a bearer token and no other credential", name, path)
		}
		return tokenUser(t, user.Token)
	}
	return ""
}

// tokenUser asks the apiserver whom a token authenticates.
func tokenUser(t *testing.T, token string) string {
	t.Helper()
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := k8s.Create(t.Context(), review); err != nil {
		t.Fatal(err)
	}
	if !review.Status.Authenticated {
		t.Fatalf("the token is not valid: %s", review.Status.Error)
	}
	return review.Status.User.Username
}

func schedulerToken(t *testing.T, rep schedrunner.Replica) string {
	t.Helper()
	config, err := clientcmd.LoadFromFile(rep.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return config.AuthInfos[config.Contexts[config.CurrentContext].AuthInfo].Token
}

// serviceAccountToken creates a ServiceAccount bound to a ClusterRole and returns a token of it.
func serviceAccountToken(t *testing.T, name, clusterRole string) string {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "default"}},
	}
	for _, obj := range []client.Object{sa, binding} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	token := &authenticationv1.TokenRequest{}
	if err := k8s.SubResource("token").Create(ctx, sa, token); err != nil {
		t.Fatal(err)
	}
	return token.Status.Token
}

// getMetrics returns the status of GET /metrics on a scheduler's secure port with a bearer token.
// The scheduler's certificate is self-signed; what is tested is whom it lets in, not who it is.
func getMetrics(t *testing.T, port int, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// assertNoAccessErrors fails if the scheduler's log shows a request the apiserver refused: a
// missing permission shows up there (as a failing informer or lease update) before anywhere else.
func assertNoAccessErrors(t *testing.T, rep schedrunner.Replica) {
	t.Helper()
	data, err := os.ReadFile(rep.Process.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "forbidden") || strings.Contains(line, "Unauthorized") ||
			strings.Contains(line, "extension-apiserver-authentication") && strings.HasPrefix(line, "E") {
			t.Errorf("the scheduler's log shows a refused request: %s", line)
		}
	}
}
