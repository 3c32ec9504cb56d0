package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// webhookObjects are what config/webhook adds: a configuration calling a Service, the Service
// targeting the operator's named port, and the certificate Secret.
const webhookObjects = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: op-validating}
webhooks:
- name: widgets.example.com
  admissionReviewVersions: [v1]
  clientConfig: {service: {name: op-webhook, namespace: op-system, path: /validate-widget}}
  failurePolicy: Fail
  matchPolicy: Equivalent
  sideEffects: None
  timeoutSeconds: 5
  rules:
  - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [widgets]}
---
apiVersion: v1
kind: Service
metadata: {name: op-webhook, namespace: op-system}
spec:
  ports: [{name: webhook, port: 443, targetPort: webhook}]
  selector: {app: op}
---
apiVersion: v1
kind: Secret
metadata: {name: op-webhook-cert, namespace: op-system}
`

// withWebhook is the input with config/webhook's objects and the Deployment serving the webhook
// with an emptyDir at the certificate directory.
func withWebhook(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs := readInput(t)
	d := find(t, objs, "Deployment", "op-system")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	manager := containers[0].(map[string]any)
	manager["ports"] = append(manager["ports"].([]any), map[string]any{"name": "webhook", "containerPort": int64(9443)})
	manager["volumeMounts"] = []any{map[string]any{"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}}
	manager["args"] = []any{"--leader-elect"}
	if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	volumes := []any{map[string]any{"name": "cert", "emptyDir": map[string]any{}}}
	if err := unstructured.SetNestedSlice(d.Object, volumes, "spec", "template", "spec", "volumes"); err != nil {
		t.Fatal(err)
	}
	more, err := decodeObjects(strings.NewReader(webhookObjects))
	if err != nil {
		t.Fatal(err)
	}
	return append(objs, more...)
}

// TestGenerateWebhook: the configuration becomes the CSV's webhookdefinitions, served by the
// Deployment on the port the Service targets; OLM provides the certificate, so the CSV's
// Deployment neither mounts the Secret nor rotates.
func TestGenerateWebhook(t *testing.T) {
	in, err := classify(withWebhook(t))
	if err != nil {
		t.Fatal(err)
	}
	csv, err := buildCSV(in, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	want := []operatorsv1alpha1.WebhookDescription{{
		GenerateName:            "widgets.example.com",
		Type:                    operatorsv1alpha1.ValidatingAdmissionWebhook,
		DeploymentName:          "op-manager",
		ContainerPort:           443,
		TargetPort:              ptr.To(intstr.FromInt32(9443)),
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](5),
		AdmissionReviewVersions: []string{"v1"},
		WebhookPath:             ptr.To("/validate-widget"),
	}}
	if diff := cmp.Diff(want, csv.Spec.WebhookDefinitions); diff != "" {
		t.Errorf("webhookdefinitions (-want +got):\n%s", diff)
	}
	pod := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	if pod.Volumes != nil || pod.Containers[0].VolumeMounts != nil {
		t.Errorf("The CSV's Deployment mounts a volume where OLM mounts the certificate: volumes %v, mounts %v", pod.Volumes, pod.Containers[0].VolumeMounts)
	}
	if diff := cmp.Diff([]string{"--leader-elect", "--disable-cert-rotation"}, pod.Containers[0].Args); diff != "" {
		t.Errorf("The CSV's operator args (-want +got):\n%s", diff)
	}
	// OLM creates the webhook's Service from the definition: the bundle does not ship it.
	for _, obj := range unboundManifests(in) {
		if obj.GetKind() == "Service" && obj.GetName() == "op-webhook" {
			t.Errorf("The bundle ships the webhook's Service %s", obj.GetName())
		}
	}
}

// TestGenerateWebhookDropsMatchConditions: a WebhookDescription cannot carry matchConditions;
// the definition is the same as without them (the validators admit what they would skip).
func TestGenerateWebhookDropsMatchConditions(t *testing.T) {
	plain, err := classify(withWebhook(t))
	if err != nil {
		t.Fatal(err)
	}
	objs := withWebhook(t)
	vwc := find(t, objs, "ValidatingWebhookConfiguration", "")
	webhooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	webhooks[0].(map[string]any)["matchConditions"] = []any{map[string]any{"name": "spec-changed", "expression": "object.spec != oldObject.spec"}}
	if err := unstructured.SetNestedSlice(vwc.Object, webhooks, "webhooks"); err != nil {
		t.Fatal(err)
	}
	withConditions, err := classify(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(withConditions.webhook.configs[0].Webhooks[0].MatchConditions) != 1 {
		t.Fatal("The input's webhook lost its matchConditions before generating")
	}
	want, err := buildCSV(plain, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := buildCSV(withConditions, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Spec.WebhookDefinitions, got.Spec.WebhookDefinitions); diff != "" {
		t.Errorf("webhookdefinitions with matchConditions (-without +with):\n%s", diff)
	}
}

func TestGenerateWebhookRefuses(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*testing.T, []*unstructured.Unstructured) []*unstructured.Unstructured
		wantErr string
	}{
		{name: "a certificate Secret without a webhook",
			edit: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "ValidatingWebhookConfiguration", "")
			},
			wantErr: `webhook Secret "op-webhook-cert": no place in the bundle`},
		{name: "no volume at the certificate directory",
			edit: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				d := find(t, objs, "Deployment", "op-system")
				containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				delete(containers[0].(map[string]any), "volumeMounts")
				if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
					t.Fatal(err)
				}
				return objs
			},
			wantErr: `mounts no volume at the webhook's certificate directory /tmp/k8s-webhook-server/serving-certs`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := generate(tc.edit(t, withWebhook(t)), testOptions)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("generate: got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestGenerateLeavesOutMutatingWebhook: a mutating webhook on pods needs its namespaceSelector
// and matchConditions, which a WebhookDescription cannot carry, so the bundle has no definition
// of it and ships no MutatingWebhookConfiguration.
func TestGenerateLeavesOutMutatingWebhook(t *testing.T) {
	const mutating = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: op-mutating}
webhooks:
- name: pods.example.com
  admissionReviewVersions: [v1]
  clientConfig: {service: {name: op-webhook, namespace: op-system, path: /mutate--v1-pod}}
  failurePolicy: Ignore
  sideEffects: None
  timeoutSeconds: 2
  namespaceSelector: {matchExpressions: [{key: example.com/scheduler-name, operator: Exists}]}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
`
	more, err := decodeObjects(strings.NewReader(mutating))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := classify(withWebhook(t))
	if err != nil {
		t.Fatal(err)
	}
	in, err := classify(append(withWebhook(t), more...))
	if err != nil {
		t.Fatal(err)
	}
	want, err := buildCSV(plain, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := buildCSV(in, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Spec.WebhookDefinitions, got.Spec.WebhookDefinitions); diff != "" {
		t.Errorf("webhookdefinitions with the mutating configuration (-without +with):\n%s", diff)
	}
	for _, obj := range unboundManifests(in) {
		if obj.GetKind() == "MutatingWebhookConfiguration" {
			t.Errorf("The bundle ships MutatingWebhookConfiguration %s", obj.GetName())
		}
	}
}
