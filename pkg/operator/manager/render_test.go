package manager

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderSamples(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "samples", "scheduling_*.yaml"))
	if err != nil || len(samples) < 3 {
		t.Fatalf("want at least 3 samples in config/samples, found %d (%v)", len(samples), err)
	}
	for _, sample := range samples {
		t.Run(filepath.Base(sample), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runRender([]string{"-f", sample}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("want nothing on stderr, got:\n%s", stderr.String())
			}
			for _, want := range []string{"kind: KubeSchedulerConfiguration", "resourceNamespace: " + defaultNamespace, "  schedulerName: "} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("output does not contain %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		args     []string
		wantCode int
		wantErr  []string
		// notErr must not be on stderr.
		notErr []string
		// flags are more arguments of the command.
		flags []string
	}{
		{
			name: "invalid args",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: broken}
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: Most}}
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: a}}, bogus: 1}`,
			wantCode: 1,
			wantErr:  []string{"SchedulerProfile broken is invalid:", `spec.pluginConfig[1].args.bogus: Forbidden: unknown field`},
		},
		{
			name: "one valid and one invalid profile",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: good}
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: bad}
spec: {plugins: {score: {enabled: [{name: NoSuchPlugin}]}}}`,
			wantCode: 1,
			wantErr:  []string{`SchedulerProfile bad is invalid:`, `spec.plugins.score.enabled[0].name: Not found: "NoSuchPlugin"`},
		},
		{
			name:     "a member of a Scheduler that is not in the file",
			file:     "apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: m}\nspec: {schedulerRef: {name: nope}}\n",
			wantCode: 1,
			wantErr:  []string{"SchedulerProfile m names Scheduler nope, which is not in the file"},
		},
		{
			name: "a member that sorts the queue unlike the first",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: Scheduler
metadata: {name: s}
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: a}
spec: {schedulerRef: {name: s}}
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: b}
spec: {schedulerRef: {name: s}, plugins: {queueSort: {disabled: [{name: "*"}], enabled: [{name: PrioritySort}]}}}`,
			wantCode: 1,
			wantErr:  []string{"SchedulerProfile b (Scheduler s) sorts the queue unlike a: spec.plugins.queueSort: must be the same for all profiles"},
		},
		{
			name: "a Scheduler with a refused gate, once for all its members",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: Scheduler
metadata: {name: s}
spec: {featureGates: {NoSuchGate: true}}
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: a}
spec: {schedulerRef: {name: s}}
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: b}
spec: {schedulerRef: {name: s}}`,
			wantCode: 1,
			wantErr:  []string{"Scheduler s is invalid:\n  spec.featureGates.NoSuchGate: Invalid value: true: unrecognized feature gate: NoSuchGate\n"},
			notErr:   []string{"SchedulerProfile a", "SchedulerProfile b"},
		},
		{
			name: "scheduler pods that reach other namespaces or preempt with a class not allowed",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  scheduler:
    priorityClassName: system-node-critical
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: topology.kubernetes.io/zone, namespaceSelector: {}, labelSelector: {}}`,
			flags:    []string{"--allowed-priority-classes", "system-cluster-critical"},
			wantCode: 1,
			wantErr: []string{
				"SchedulerProfile p is invalid:\n",
				"  spec.scheduler.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector: Forbidden: the scheduler pods' affinity may only select pods of the operator's namespace: leave it out\n",
				`  spec.scheduler.priorityClassName: Forbidden: priority class "system-node-critical" is not allowed for scheduler pods; the operator allows "system-cluster-critical" (--allowed-priority-classes, set by the cluster admin)`,
			},
		},
		{
			name: "a priority class the flag allows",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec: {scheduler: {priorityClassName: system-cluster-critical}}`,
			flags:    []string{"--allowed-priority-classes=system-cluster-critical"},
			wantCode: 0,
		},
		{
			name: "a Scheduler with a priority class not allowed, once for all its members",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: Scheduler
metadata: {name: s}
spec: {priorityClassName: high}
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: a}
spec: {schedulerRef: {name: s}}`,
			wantCode: 1,
			wantErr:  []string{"Scheduler s is invalid:\n  spec.priorityClassName: Forbidden: priority class \"high\" is not allowed for scheduler pods; the operator allows none"},
			notErr:   []string{"SchedulerProfile a"},
		},
		{
			name: "scheduler pods past the caps",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  scheduler:
    resources: {requests: {cpu: "8"}, limits: {memory: 12Gi}}
    tolerations: [{operator: Exists}]`,
			wantCode: 1,
			wantErr: []string{
				"SchedulerProfile p is invalid:\n",
				"  spec.scheduler.resources.requests[cpu]: Forbidden: a cpu request of 8 is more than scheduler pods may have; the operator allows at most 4 (--max-scheduler-cpu, set by the cluster admin)\n",
				"  spec.scheduler.resources.limits[memory]: Forbidden: a memory limit of 12Gi is more than scheduler pods may have; the operator allows at most 8Gi (--max-scheduler-memory, set by the cluster admin)\n",
				"  spec.scheduler.tolerations[0]: Forbidden: a toleration without a key and with operator Exists tolerates every taint",
			},
		},
		{
			name: "scheduler pods within the caps the flags set",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: p}
spec:
  scheduler:
    resources: {requests: {cpu: "8"}, limits: {memory: 12Gi}}
    tolerations: [{operator: Exists}]`,
			flags:    []string{"--max-scheduler-cpu=8", "--max-scheduler-memory", "16Gi", "--allow-tolerate-all-taints"},
			wantCode: 0,
		},
		{
			name:     "a cap below the default requests",
			file:     "apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: p}\n",
			flags:    []string{"--max-scheduler-memory=64Mi"},
			wantCode: 2,
			wantErr:  []string{"error: --max-scheduler-memory must be at least 128Mi"},
		},
		{
			name:     "a field the API does not have",
			file:     "apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: p}\nspec: {scheduler: {image: evil}}\n",
			wantCode: 1,
			wantErr:  []string{`unknown field "image"`},
		},
		{
			name:     "not a profile",
			file:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\n",
			wantCode: 1,
			wantErr:  []string{"is v1 ConfigMap, not a scheduling.schedops.io/v1alpha1 SchedulerProfile"},
		},
		{
			name:     "no file",
			args:     []string{},
			wantCode: 2,
			wantErr:  []string{"Usage: manager render -f profile.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				path := filepath.Join(t.TempDir(), "profile.yaml")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"-f", path}, tc.flags...)
			}
			var stdout, stderr bytes.Buffer
			if code := runRender(args, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not contain %q:\n%s", want, stderr.String())
				}
			}
			for _, not := range tc.notErr {
				if strings.Contains(stderr.String(), not) {
					t.Errorf("stderr contains %q:\n%s", not, stderr.String())
				}
			}
		})
	}
}

// TestRenderAdvice: render prints the advice on a valid profile to stderr, after its
// configuration on stdout, and exits 0; the annotation silences the codes it lists; a member of a
// Scheduler is checked with the Scheduler's extenders.
func TestRenderAdvice(t *testing.T) {
	const bestEffortBinpack = `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: binpack%s}
spec:
  plugins: {score: {disabled: [{name: PodTopologySpread}]}}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`
	tests := []struct {
		name    string
		file    string
		wantErr []string
		// quiet is true when nothing may be printed on stderr.
		quiet bool
	}{
		{
			name: "bin-packing with balanced allocation",
			file: strings.ReplaceAll(bestEffortBinpack, "%s", ""),
			wantErr: []string{
				"SchedulerProfile binpack: advice (docs/reference/advice.md):",
				"  SPA104: bin-packing (spec.pluginConfig[NodeResourcesFit].args.scoringStrategy.type MostAllocated, weight 1) runs with NodeResourcesBalancedAllocation scoring (weight 1)",
			},
		},
		{
			name:  "the same, with SPA104 silenced",
			file:  strings.ReplaceAll(bestEffortBinpack, "%s", ", annotations: {scheduling.schedops.io/advice-ignore: SPA104}"),
			quiet: true,
		},
		{
			name: "a member of a Scheduler with a filter extender",
			file: `
apiVersion: scheduling.schedops.io/v1alpha1
kind: Scheduler
metadata: {name: shared}
spec:
  extenders: [{urlPrefix: "http://extender.example:8888", filterVerb: filter, ignorable: true}]
---
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: member}
spec: {schedulerRef: {name: shared}}
`,
			wantErr: []string{"SchedulerProfile member (Scheduler shared): advice", "  SPA402: the scheduler's extenders (spec.extenders, 1)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profile.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := runRender([]string{"-f", path}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d, want 0: advice is no error; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "kind: KubeSchedulerConfiguration") {
				t.Errorf("no configuration on stdout:\n%s", stdout.String())
			}
			if strings.Contains(stdout.String(), "SPA") {
				t.Errorf("advice on stdout, which holds the configuration only:\n%s", stdout.String())
			}
			if tc.quiet && stderr.Len() > 0 {
				t.Errorf("want nothing on stderr, got:\n%s", stderr.String())
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not contain %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// TestRenderAdviceOnACluster: with --cluster, render runs the cluster checks against the
// snapshot: the zone-spread sample on the docs' example cluster (two zones) says nothing, and on
// a cluster without zone labels it says that no node carries the key.
func TestRenderAdviceOnACluster(t *testing.T) {
	atRoot(t)
	noZones := filepath.Join(t.TempDir(), "cluster.yaml")
	const nodes = `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}}
`
	if err := os.WriteFile(noZones, []byte(nodes), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cluster string
		want    string
	}{
		{cluster: simCluster},
		{cluster: noZones, want: "  SPA301: spec.pluginConfig[PodTopologySpread].args.defaultConstraints[0] (DoNotSchedule) spreads on topology.kubernetes.io/zone, which 0 of 2 nodes carry"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runRender([]string{"-f", sample + "spread.yaml", "--cluster", tc.cluster}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit code %d, stderr:\n%s", tc.cluster, code, stderr.String())
		}
		if tc.want == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q, want %q", tc.cluster, stderr.String(), tc.want)
		}
	}
	var stderr bytes.Buffer
	if code := runRender([]string{"-f", sample + "spread.yaml", "--cluster", simCluster, "--kubeconfig", "k"}, &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("--cluster with --kubeconfig: exit code %d, want 2", code)
	}
}
