package olm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// crdsEnv names the directory of OLM's CRDs (deploy/chart/crds of its module); make test-olm
	// points it into the module that hack/tools/olm pins.
	crdsEnv = "OLM_CRDS"
	// catalogEnv names the catalog file of make catalog; opm serves its directory.
	catalogEnv = "OLM_CATALOG"
	// olmNamespace is the namespace of OLM's global catalog, as OLM's own manifests name it.
	olmNamespace = "olm"
	// catalogSourceName is the CatalogSource that points at opm.
	catalogSourceName = "scheduler-profile-operator"
	// catalogReadyTimeout bounds the wait for the CatalogSource's READY: OLM's catalog operator
	// dials opm within seconds once both run.
	catalogReadyTimeout = time.Minute
	// installPlanRetryTimeout is how long the catalog operator retries a step of an InstallPlan
	// that fails before it fails the plan; its default is a minute, shortened so that a failing
	// install shows in the tier's time budget.
	installPlanRetryTimeout = "15s"
)

// olmBinaries are OLM's programs.
type olmBinaries struct {
	olm, catalog, opm string
	crds, catalogFile string
}

// olmProcesses are OLM's two operators and opm, running beside the cluster.
type olmProcesses struct {
	procs []*localcluster.Process
}

// findOLM locates OLM's programs in binDir, its CRDs ($OLM_CRDS) and the catalog ($OLM_CATALOG).
func findOLM(binDir string) (olmBinaries, error) {
	b := olmBinaries{
		olm: filepath.Join(binDir, "olm"), catalog: filepath.Join(binDir, "catalog"), opm: filepath.Join(binDir, "opm"),
		crds: os.Getenv(crdsEnv), catalogFile: os.Getenv(catalogEnv),
	}
	if b.crds == "" || b.catalogFile == "" {
		return b, fmt.Errorf("%s and %s must be set: run make test-olm", crdsEnv, catalogEnv)
	}
	for _, f := range []string{b.olm, b.catalog, b.opm, b.catalogFile} {
		if _, err := os.Stat(f); err != nil {
			return b, fmt.Errorf("run make test-olm, which builds OLM from hack/tools/olm and the catalog: %w", err)
		}
	}
	return b, nil
}

// startOLM installs OLM's CRDs and namespace, starts its two operators and opm, and creates the
// CatalogSource of the catalog; it returns once the CatalogSource is READY.
func startOLM(ctx context.Context, b olmBinaries, kubeconfig, dir string) (*olmProcesses, error) {
	files, err := filepath.Glob(filepath.Join(b.crds, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no CRD in %s", crdsEnv, b.crds)
	}
	if err := operatorenv.InstallCRDs(ctx, k8s, files...); err != nil {
		return nil, err
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: olmNamespace}}); err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	grpcPort, pprofPort := strconv.Itoa(ports[0]), strconv.Itoa(ports[1])
	o := &olmProcesses{}
	env := []string{"KUBECONFIG=" + kubeconfig}
	// Both operators serve health and metrics on :8080, which no flag moves; the second to start
	// logs that the port is taken and runs on. Nothing of the tests reads them.
	starts := []struct {
		name, binary string
		args         []string
	}{
		{"olm", b.olm, []string{"--namespace=" + olmNamespace, "--writeStatusName="}},
		{"catalog", b.catalog, []string{"--namespace=" + olmNamespace, "--writeStatusName=", "--install-plan-retry-timeout=" + installPlanRetryTimeout}},
		// opm listens on every address (":port"); the port is a free one of 127.0.0.1.
		{"opm", b.opm, []string{"serve", filepath.Dir(b.catalogFile), "--port=" + grpcPort,
			"--pprof-addr=127.0.0.1:" + pprofPort, "--termination-log=" + filepath.Join(dir, "opm.termination-log")}},
	}
	for _, s := range starts {
		p, err := localcluster.StartProcess(s.name, s.binary, s.args, env, filepath.Join(dir, s.name+".log"), false)
		if err != nil {
			o.stop()
			return nil, err
		}
		o.procs = append(o.procs, p)
	}
	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: catalogSourceName, Namespace: olmNamespace},
		Spec: operatorsv1alpha1.CatalogSourceSpec{
			SourceType: operatorsv1alpha1.SourceTypeGrpc, Address: "127.0.0.1:" + grpcPort, DisplayName: "scheduler-profile-operator (make catalog)",
		},
	}
	if err := k8s.Create(ctx, cs); err != nil {
		o.stop()
		return nil, err
	}
	err = testutil.Poll(ctx, catalogReadyTimeout, func(ctx context.Context) error {
		for _, p := range o.procs {
			if !p.Alive() {
				return fmt.Errorf("%s exited", p.Name)
			}
		}
		return catalogReady(ctx)
	})
	if err != nil {
		err = fmt.Errorf("the CatalogSource is not READY: %w\n%s", err, o.logs(20))
		o.stop()
		return nil, err
	}
	return o, nil
}

// catalogReady fails unless OLM's catalog operator reports the CatalogSource's connection READY,
// with what it reports otherwise.
func catalogReady(ctx context.Context) error {
	cs := &operatorsv1alpha1.CatalogSource{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: olmNamespace, Name: catalogSourceName}, cs); err != nil {
		return err
	}
	if s := cs.Status.GRPCConnectionState; s == nil || s.LastObservedState != "READY" {
		return fmt.Errorf("CatalogSource %s/%s: connectionState %+v, message %q", olmNamespace, catalogSourceName, s, cs.Status.Message)
	}
	return nil
}

// logs is the end of each OLM process's log.
func (o *olmProcesses) logs(lines int) string {
	var b strings.Builder
	for _, p := range o.procs {
		fmt.Fprintf(&b, "%s's log (%s), last lines:\n%s\n", p.Name, p.Log, fileTail(p.Log, lines))
	}
	return b.String()
}

// stop stops OLM's processes.
func (o *olmProcesses) stop() {
	for _, p := range o.procs {
		if err := p.Stop(10 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "stopping %s: %v\n", p.Name, err)
		}
	}
}

// fileTail returns the last lines of the file at path.
func fileTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
