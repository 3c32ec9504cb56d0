package node

// This file's test runs after the others but the release's (the tests of a package run in the
// order of their files): it removes what `make deploy` installed and installs the OLM bundle in
// its place.

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

const (
	csvFile = "bundle/manifests/scheduler-profile-operator.clusterserviceversion.yaml"
	// olmNamespace is the install namespace of the bundle (OwnNamespace mode).
	olmNamespace = "schedops-olm"
	// olmCertDir is where OLM mounts a webhook's serving certificate into the operator's pod.
	olmCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// csvImage is the operator image the bundle names (the release image of VERSION); the tier packs
// `make image`'s binaries under that name, so the CSV's Deployment runs as written.
func csvImage() (string, error) {
	csv, err := framework.ReadCSV(filepath.Join(paths.Root, csvFile))
	if err != nil {
		return "", err
	}
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 || len(deps[0].Spec.Template.Spec.Containers) == 0 {
		return "", fmt.Errorf("the CSV installs %d Deployments, want 1", len(deps))
	}
	return deps[0].Spec.Template.Spec.Containers[0].Image, nil
}

// undeploy removes every profile and Scheduler, then what `make deploy` installed.
func undeploy(t *testing.T) {
	t.Helper()
	for _, kind := range []string{"schedulerprofiles", "schedulers"} {
		if out, err := runKubectl(t, "", "delete", kind, "--all", "--wait"); err != nil {
			t.Fatalf("kubectl delete %s --all: %v\n%s", kind, err, out)
		}
	}
	if out, err := operatorenv.MakeCommand(t.Context(), cluster, paths, "undeploy", img).CombinedOutput(); err != nil {
		t.Fatalf("make undeploy: %v\n%s", err, out)
	}
	testutil.Eventually(t, 3*time.Minute, "namespace "+namespace+" to be gone", func(ctx context.Context) error {
		err := k8s.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}

// olmWebhook creates what OLM creates for the CSV's webhookdefinitions: a serving certificate of
// its own CA for the Deployment's Service, in a Secret; the Service; the
// ValidatingWebhookConfiguration calling it. It returns the Secret's name.
func olmWebhook(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, deployment operatorsv1alpha1.StrategyDeploymentSpec, create func(client.Object)) string {
	t.Helper()
	service := deployment.Name + "-service"
	ca, err := localcluster.NewCA("olm-webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	dns := service + "." + olmNamespace + ".svc"
	serving, err := ca.Sign(certutil.Config{CommonName: dns, AltNames: certutil.AltNames{DNSNames: []string{dns, dns + ".cluster.local"}}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Fatal(err)
	}
	key, err := serving.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	secret := service + "-cert"
	create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: secret},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: serving.CertPEM(), corev1.TLSPrivateKeyKey: key},
	})
	def := csv.Spec.WebhookDefinitions[0]
	create(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: service},
		Spec: corev1.ServiceSpec{
			Selector: deployment.Spec.Selector.MatchLabels,
			Ports:    []corev1.ServicePort{{Port: def.ContainerPort, TargetPort: *def.TargetPort}},
		},
	})
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: csv.Name + "-webhooks"}}
	for _, def := range csv.Spec.WebhookDefinitions {
		vwc.Webhooks = append(vwc.Webhooks, def.GetValidatingWebhook(olmNamespace, nil, ca.CertPEM()))
	}
	create(vwc)
	return secret
}

// TestOLMBundleOnTheRealNode installs the OLM bundle the way OLM does (OwnNamespace): the CRDs
// of bundle/manifests, the CSV's ServiceAccount and permissions, its webhooks with a certificate
// OLM would have made, and its Deployment as written (OLM adds the certificate's volume), which
// runs as a container on the real node; a profile is then admitted, refused when invalid, and
// its scheduler binds a pod, and a namespace labelled with its name is assigned by the policy.
func TestOLMBundleOnTheRealNode(t *testing.T) {
	undeploy(t)
	ctx := t.Context()
	csv, err := framework.ReadCSV(filepath.Join(paths.Root, csvFile))
	if err != nil {
		t.Fatal(err)
	}
	var created []client.Object
	create := func(obj client.Object) {
		t.Helper()
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("Creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		created = append(created, obj)
	}
	t.Cleanup(func() {
		_, _ = runKubectl(t, "", "delete", "schedulerprofiles", "--all", "--wait")
		for _, obj := range slices.Backward(created) {
			_ = k8s.Delete(context.Background(), obj)
		}
	})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: olmNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}})
	crds, err := filepath.Glob(filepath.Join(paths.Root, "bundle", "manifests", "scheduling.schedops.io_*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("The bundle's CRDs: %v %v", crds, err)
	}
	for _, file := range crds {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		create(crd)
	}
	deployment := framework.GrantCSVPermissions(t, csv, olmNamespace, create)
	secret := olmWebhook(t, csv, deployment, create)

	// The CSV's Deployment, with the certificate volume OLM adds for webhooks.
	spec := *deployment.Spec.DeepCopy()
	pod := &spec.Template.Spec
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "webhook-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "webhook-cert", MountPath: olmCertDir, ReadOnly: true})
	start := time.Now()
	create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: deployment.Name, Labels: deployment.Label}, Spec: spec})
	var op corev1.Pod
	testutil.Eventually(t, 3*time.Minute, "the CSV's Deployment to run a ready pod", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(olmNamespace), client.MatchingLabels(spec.Selector.MatchLabels)); err != nil {
			return err
		}
		if len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) == 0 || !pods.Items[0].Status.ContainerStatuses[0].Ready {
			return fmt.Errorf("%d pods, not ready", len(pods.Items))
		}
		op = pods.Items[0]
		return nil
	})
	t.Logf("the CSV's operator pod was ready %s after its Deployment was created", time.Since(start).Round(100*time.Millisecond))
	if op.Spec.NodeName != realNode {
		t.Errorf("The operator runs on %q, want the real node", op.Spec.NodeName)
	}
	checkRunsImage(t, &op)

	// The webhook refuses an invalid profile (reached through the Service OLM made).
	refusesInvalid(t, "olm", "the bundle's")

	// A sample of alm-examples is admitted, served, and binds a pod onto a kwok node.
	var examples []schedulingv1alpha1.SchedulerProfile
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	i := slices.IndexFunc(examples, func(p schedulingv1alpha1.SchedulerProfile) bool { return p.Name == "binpack" })
	if i < 0 {
		t.Fatal("alm-examples has no binpack profile")
	}
	if err := k8s.Create(ctx, &examples[i]); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, "binpack", 3*time.Minute)
	deletePods(t, "olm")
	pod2 := workloadPod("olm", "olm-binpack", "binpack")
	if err := k8s.Create(ctx, pod2); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the binpack pod to be bound", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod2), pod2); err != nil {
			return err
		}
		if !strings.HasPrefix(pod2.Spec.NodeName, "kwok-") {
			return fmt.Errorf("node %q", pod2.Spec.NodeName)
		}
		return nil
	})
	var schedulers corev1.PodList
	if err := k8s.List(ctx, &schedulers, client.InNamespace(olmNamespace), client.HasLabels{"app.kubernetes.io/managed-by"}); err != nil {
		t.Fatal(err)
	}
	for i := range schedulers.Items {
		if s := &schedulers.Items[i]; s.Name != op.Name {
			if s.Spec.NodeName != realNode {
				t.Errorf("Scheduler pod %s runs on %q, want the real node", s.Name, s.Spec.NodeName)
			}
			checkRunsImage(t, s)
		}
	}
	t.Logf("binpack's scheduler, run by the bundle's operator on the real node, bound %s onto %s", pod2.Name, pod2.Spec.NodeName)

	// The bundle's operator keeps the assignment policies itself: a labelled namespace is
	// assigned under OLM too.
	assignsThroughPolicy(t, "olm-assigned", "binpack")
}
