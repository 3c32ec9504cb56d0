package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestCRDStaticValidation sends profiles to the real apiserver (server-side dry run, strict field
// validation, as kubectl does) and checks that the CRD's schema and CEL rules accept what they should
// and reject what they should with a readable message.
func TestCRDStaticValidation(t *testing.T) {
	name40 := strings.Repeat("a", 40)
	name41 := strings.Repeat("a", 41)
	label64 := strings.Repeat("s", 64)

	tests := []struct {
		name    string
		profile string
		// wantErr is a part of the apiserver's message; empty means the profile is accepted.
		wantErr string
	}{
		{name: "no spec", profile: `metadata: {name: binpack}`},
		{name: "empty spec", profile: `{metadata: {name: binpack}, spec: {}}`},
		{name: "name of 40 characters", profile: `metadata: {name: ` + name40 + `}`},
		{name: "explicit scheduler name", profile: `{metadata: {name: binpack}, spec: {schedulerName: team-a-binpack}}`},
		{name: "profile named default-scheduler with another schedulerName", profile: `{metadata: {name: default-scheduler}, spec: {schedulerName: mine}}`},
		{name: "percentage bounds", profile: `{metadata: {name: p}, spec: {percentageOfNodesToScore: 100}}`},
		{name: "multiPoint with weight and disabled defaults", profile: `
metadata: {name: binpack}
spec:
  plugins:
    multiPoint: {enabled: [{name: NodeLabelPreference, weight: 2}], disabled: [{name: "*"}]}
    score: {disabled: [{name: NodeResourcesBalancedAllocation}]}
    placementScore: {enabled: [{name: Example, weight: 100}]}`},
		{name: "member of a shared scheduler", profile: `{metadata: {name: m}, spec: {schedulerRef: {name: batch}, plugins: {score: {disabled: [{name: NodeResourcesBalancedAllocation}]}}}}`},
		{name: "member with its own scheduler settings", profile: `{metadata: {name: m}, spec: {schedulerRef: {name: batch}, scheduler: {replicas: 2}}}`,
			wantErr: "a profile with spec.schedulerRef runs in that Scheduler's process"},
		{name: "member with extenders", profile: `{metadata: {name: m}, spec: {schedulerRef: {name: batch}, extenders: [{urlPrefix: "http://127.0.0.1:8888", filterVerb: filter}]}}`,
			wantErr: "a profile with spec.schedulerRef runs in that Scheduler's process"},
		{name: "access by labels and expressions", profile: `{metadata: {name: a}, spec: {access: {namespaceSelector: {matchLabels: {team: ml}, matchExpressions: [{key: tier, operator: NotIn, values: [dev]}, {key: gpu, operator: Exists}]}}}}`},
		{name: "access with an unknown operator", profile: `{metadata: {name: a}, spec: {access: {namespaceSelector: {matchExpressions: [{key: tier, operator: Near}]}}}}`,
			wantErr: `spec.access.namespaceSelector.matchExpressions[0].operator: Unsupported value: "Near"`},
		{name: "access In without values", profile: `{metadata: {name: a}, spec: {access: {namespaceSelector: {matchExpressions: [{key: tier, operator: In}]}}}}`,
			wantErr: "values are required for In and NotIn, and not allowed for Exists and DoesNotExist"},
		{name: "schedulerRef to an invalid name", profile: `{metadata: {name: m}, spec: {schedulerRef: {name: Batch_1}}}`,
			wantErr: "spec.schedulerRef.name in body should match"},
		{name: "free-form plugin args", profile: `
metadata: {name: binpack}
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: a}}}`},
		{name: "prioritizing extender with weight", profile: `
metadata: {name: ext}
spec:
  extenders: [{urlPrefix: "https://extender.example:8443/scheduler", prioritizeVerb: prioritize, weight: 1, httpTimeout: 5s}]`},
		{name: "filtering extender without weight", profile: `
metadata: {name: ext}
spec:
  extenders: [{urlPrefix: "http://127.0.0.1:8888", filterVerb: filter}]`},
		{name: "scheduler settings", profile: `
metadata: {name: ha}
spec:
  scheduler:
    replicas: 3
    logVerbosity: 10
    priorityClassName: system-cluster-critical
    resources: {requests: {cpu: 200m, memory: 256Mi}}
    nodeSelector: {node-role.kubernetes.io/control-plane: ""}
    tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]`},

		{name: "name too long", profile: `metadata: {name: ` + name41 + `}`,
			wantErr: "metadata.name must be at most 40 characters"},
		{name: "name not a DNS label", profile: `metadata: {name: bin.pack}`,
			wantErr: "metadata.name must be a DNS-1123 label"},
		{name: "profile named default-scheduler without schedulerName", profile: `metadata: {name: default-scheduler}`,
			wantErr: "a profile named default-scheduler must set spec.schedulerName"},
		{name: "schedulerName default-scheduler", profile: `{metadata: {name: p}, spec: {schedulerName: default-scheduler}}`,
			wantErr: "schedulerName must not be default-scheduler"},
		{name: "schedulerName not a DNS label", profile: `{metadata: {name: p}, spec: {schedulerName: Bin_Pack}}`,
			wantErr: `spec.schedulerName: Invalid value: "Bin_Pack": spec.schedulerName in body should match`},
		{name: "schedulerName too long", profile: `{metadata: {name: p}, spec: {schedulerName: ` + label64 + `}}`,
			wantErr: "spec.schedulerName: Too long: may not be more than 63"},
		{name: "percentage above 100", profile: `{metadata: {name: p}, spec: {percentageOfNodesToScore: 101}}`,
			wantErr: "spec.percentageOfNodesToScore: Invalid value: 101: spec.percentageOfNodesToScore in body should be less than or equal to 100"},
		{name: "negative percentage", profile: `{metadata: {name: p}, spec: {percentageOfNodesToScore: -1}}`,
			wantErr: "spec.percentageOfNodesToScore in body should be greater than or equal to 0"},
		{name: "negative plugin weight", profile: `{metadata: {name: p}, spec: {plugins: {score: {enabled: [{name: ImageLocality, weight: -1}]}}}}`,
			wantErr: "spec.plugins.score.enabled[0].weight in body should be greater than or equal to 0"},
		{name: "plugin weight above 100", profile: `{metadata: {name: p}, spec: {plugins: {multiPoint: {enabled: [{name: ImageLocality, weight: 101}]}}}}`,
			wantErr: "spec.plugins.multiPoint.enabled[0].weight in body should be less than or equal to 100"},
		{name: "empty plugin name", profile: `{metadata: {name: p}, spec: {plugins: {filter: {enabled: [{name: ""}]}}}}`,
			wantErr: "spec.plugins.filter.enabled[0].name in body should be at least 1 chars long"},
		{name: "duplicate pluginConfig", profile: `{metadata: {name: p}, spec: {pluginConfig: [{name: NodeResourcesFit}, {name: NodeResourcesFit}]}}`,
			wantErr: `spec.pluginConfig[1]: Duplicate value: {"name":"NodeResourcesFit"}`},
		{name: "args not an object", profile: `{metadata: {name: p}, spec: {pluginConfig: [{name: NodeResourcesFit, args: 5}]}}`,
			wantErr: `spec.pluginConfig[0].args: Invalid value: "integer": spec.pluginConfig[0].args in body must be of type object`},
		{name: "zero replicas", profile: `{metadata: {name: p}, spec: {scheduler: {replicas: 0}}}`,
			wantErr: "spec.scheduler.replicas in body should be greater than or equal to 1"},
		{name: "too many replicas", profile: `{metadata: {name: p}, spec: {scheduler: {replicas: 6}}}`,
			wantErr: "spec.scheduler.replicas in body should be less than or equal to 5"},
		{name: "log verbosity above 10", profile: `{metadata: {name: p}, spec: {scheduler: {logVerbosity: 11}}}`,
			wantErr: "spec.scheduler.logVerbosity in body should be less than or equal to 10"},
		{name: "prioritizing extender without weight", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "http://e", prioritizeVerb: prioritize}]}}`,
			wantErr: "spec.extenders[0]: Invalid value: weight must be positive when prioritizeVerb is set"},
		{name: "extender that is not http", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "ftp://e", filterVerb: filter}]}}`,
			wantErr: `spec.extenders[0].urlPrefix: Invalid value: "ftp://e": urlPrefix must be an http:// or https:// URL`},
		{name: "extender without urlPrefix", profile: `{metadata: {name: p}, spec: {extenders: [{filterVerb: filter}]}}`,
			wantErr: "spec.extenders[0].urlPrefix: Required value"},
		{name: "extender client key inline", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "https://e", filterVerb: filter, tlsConfig: {certData: Y2VydA==, keyData: a2V5}}]}}`,
			wantErr: "spec.extenders[0].tlsConfig: Invalid value: keyData is not accepted: put the client certificate and key in a Secret in the operator's namespace and name it in tlsConfig.secretRef"},
		{name: "extender certData with secretRef", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "https://e", filterVerb: filter, tlsConfig: {certData: Y2VydA==, secretRef: {name: client}}}]}}`,
			wantErr: "certData and secretRef are exclusive"},
		{name: "extender insecure with a CA", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "https://e", filterVerb: filter, enableHTTPS: true, tlsConfig: {insecure: true, caData: Y2E=}}]}}`,
			wantErr: "insecure: true and caData are exclusive"},
		{name: "extender key file is not a field", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "https://e", filterVerb: filter, tlsConfig: {keyFile: /etc/key.pem}}]}}`,
			wantErr: `unknown field "spec.extenders[0].tlsConfig.keyFile"`},
		{name: "extender TLS from a Secret", profile: `{metadata: {name: p}, spec: {extenders: [{urlPrefix: "https://e", filterVerb: filter, enableHTTPS: true, tlsConfig: {secretRef: {name: client-tls}, caData: Y2E=}}]}}`},
		{name: "image is not a field", profile: `{metadata: {name: p}, spec: {scheduler: {image: "evil:latest"}}}`,
			wantErr: `unknown field "spec.scheduler.image"`},
	}

	accepted, rejected := 0, 0
	for _, tc := range tests {
		if tc.wantErr == "" {
			accepted++
		} else {
			rejected++
		}
		t.Run(tc.name, func(t *testing.T) {
			obj := profileFromYAML(t, tc.profile)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := k8sClient.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("want the profile accepted, got: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("want the profile rejected with %q, it was accepted", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("want an error containing %q, got: %v", tc.wantErr, err)
			}
		})
	}
	if accepted < 10 || rejected < 10 {
		t.Errorf("the table must cover at least 10 accepted and 10 rejected profiles, has %d and %d", accepted, rejected)
	}
}

// TestCRDPreservesPluginArgs checks that free-form plugin args survive the round trip through the
// apiserver untouched (they are not pruned by the structural schema).
func TestCRDPreservesPluginArgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj := profileFromYAML(t, `
metadata: {name: args-roundtrip}
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 3}]}}`)
	if err := k8sClient.Create(ctx, obj, client.DryRunAll); err != nil {
		t.Fatalf("creating: %v", err)
	}
	got, found, err := unstructured.NestedSlice(obj.Object, "spec", "pluginConfig")
	if err != nil || !found || len(got) != 1 {
		t.Fatalf("pluginConfig after create: %v (found %v, err %v)", got, found, err)
	}
	weight, _, _ := unstructured.NestedSlice(got[0].(map[string]any), "args", "scoringStrategy", "resources")
	if len(weight) != 1 || weight[0].(map[string]any)["weight"] != int64(3) {
		t.Errorf("args were not preserved: %v", got[0])
	}
}

func profileFromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("parsing test profile: %v", err)
	}
	obj.SetAPIVersion("scheduling.schedops.io/v1alpha1")
	obj.SetKind("SchedulerProfile")
	return obj
}
