package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// writeKubeconfig writes a kubeconfig file for rc into dir, so that a separate process (the
// scheduler) reaches the envtest apiserver with the same identity as the tests.
func writeKubeconfig(t *testing.T, rc *rest.Config, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	if err := framework.WriteKubeconfig(rc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// schedulerConfig renders a KubeSchedulerConfiguration with one profile, schedulerName, that
// enables NodePool (pool=a) and NodeLabelPreference (tier=spot, weight 10; plugin weight 2) on
// top of the default plugins. extraNodePoolArgs is appended inside NodePool's args, to inject
// a field that strict decoding must refuse. Leader election is off: one replica, and it must not
// touch the default kube-system/kube-scheduler lease.
func schedulerConfig(kubeconfig, schedulerName, extraNodePoolArgs string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %s
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: NodePool
      - name: NodeLabelPreference
        weight: 2
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: a}}%s}
  - name: NodeLabelPreference
    args:
      preferences:
      - {key: tier, values: [spot], weight: 10}
`, strconv.Quote(kubeconfig), schedulerName, extraNodePoolArgs)
}

// writeFile writes content into dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("Writing %s: %v", path, err)
	}
	return path
}
