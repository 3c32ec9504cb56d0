// Tests of the alerts (config/prometheus/alerts.yaml) and the Grafana dashboard
// (config/grafana/scheduler-profile-operator.json). They live in promtool's tools module because
// Prometheus' PromQL parser comes with github.com/prometheus/prometheus, which the operator's
// go.mod does not need. `make test-monitoring` runs them with PROMTOOL set to bin/promtool-*.
package promtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// Paths relative to the repository root.
const (
	repoRoot    = "../../.."
	alertsFile  = "config/prometheus/alerts.yaml"
	testsDir    = "config/prometheus/tests"
	metricsFile = "config/prometheus/tests/metrics.txt"
	dashboard   = "config/grafana/scheduler-profile-operator.json"
	runbooks    = "docs/operations/alerts.md"
	// runbookBase is where every alert's runbook_url points, at the anchor of its section.
	runbookBase = "https://github.com/schedops/scheduler-profile-operator/blob/main/" + runbooks
	// rulesFile is what the rule tests' rule_files name: the PrometheusRule's spec, as promtool reads it.
	rulesFile = "alerts.rules.yaml"
)

// metricSources are the exporters a line of metricsFile may name (see its header).
var metricSources = []string{"operator", "operator-registered", "scheduler"}

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rule is one rule of the PrometheusRule.
type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// readRules decodes alertsFile and returns it with its spec as YAML, which is a rule file.
func readRules(t *testing.T) (*prometheusRule, []byte) {
	t.Helper()
	data := readFile(t, alertsFile)
	var pr prometheusRule
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatalf("Decoding %s: %v", alertsFile, err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("%s is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", alertsFile, pr.APIVersion, pr.Kind)
	}
	var raw struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.JSONToYAML(raw.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return &pr, spec
}

func alerts(pr *prometheusRule) []rule {
	var out []rule
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// promtool runs bin/promtool-* (PROMTOOL) with args in dir and returns its output.
func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin := os.Getenv("PROMTOOL")
	if bin == "" {
		t.Fatal("PROMTOOL is not set: run these tests with `make test-monitoring`, which builds bin/promtool-*")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out.String())
	if err != nil {
		t.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// rulesDir writes the PrometheusRule's spec and the rule tests into a directory, as the tests'
// rule_files expect them.
func rulesDir(t *testing.T) string {
	t.Helper()
	_, spec := readRules(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rulesFile), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := filepath.Glob(filepath.Join(repoRoot, testsDir, "*_test.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("No rule tests in %s (%v)", testsDir, err)
	}
	for _, f := range tests {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPromtoolCheckRules: promtool accepts the rules, with its lint checks.
func TestPromtoolCheckRules(t *testing.T) {
	dir := rulesDir(t)
	promtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", rulesFile)
}

// TestPromtoolTestRules runs the rule tests, and checks that every alert has one that fires it
// and one that expects it silent.
func TestPromtoolTestRules(t *testing.T) {
	dir := rulesDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.yaml"))
	args := []string{"test", "rules"}
	fired, silent := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		args = append(args, filepath.Base(f))
		var suite struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string            `json:"alertname"`
					ExpAlerts []json.RawMessage `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &suite); err != nil {
			t.Fatalf("Decoding %s: %v", f, err)
		}
		for _, tc := range suite.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fired[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
	}
	pr, _ := readRules(t)
	for _, a := range alerts(pr) {
		if !fired[a.Alert] || !silent[a.Alert] {
			t.Errorf("Alert %s: a rule test that fires it: %t, one that expects it silent: %t; want both", a.Alert, fired[a.Alert], silent[a.Alert])
		}
	}
	out := promtool(t, dir, args...)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules did not report SUCCESS")
	}
}

// headingRE and slugDrop make GitHub's anchors, as docs/docs_test.go does.
var (
	headingRE = regexp.MustCompile(`(?m)^#{1,6}\s+(.*)$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// TestAlertsAnnotated: every alert has a severity, a summary, a description and a runbook_url at
// the anchor of its own section of docs/operations/alerts.md.
func TestAlertsAnnotated(t *testing.T) {
	sections := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(string(readFile(t, runbooks)), -1) {
		slug := slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		sections[strings.ReplaceAll(slug, " ", "-")] = true
	}
	pr, _ := readRules(t)
	as := alerts(pr)
	if len(as) == 0 {
		t.Fatalf("%s has no alerts", alertsFile)
	}
	for _, a := range as {
		if s := a.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("Alert %s: severity %q, want critical or warning", a.Alert, s)
		}
		for _, key := range []string{"summary", "description"} {
			if strings.TrimSpace(a.Annotations[key]) == "" {
				t.Errorf("Alert %s has no %s", a.Alert, key)
			}
		}
		anchor := strings.ToLower(a.Alert)
		if want := runbookBase + "#" + anchor; a.Annotations["runbook_url"] != want {
			t.Errorf("Alert %s: runbook_url %q, want %q", a.Alert, a.Annotations["runbook_url"], want)
		}
		if !sections[anchor] {
			t.Errorf("Alert %s: %s has no section %q", a.Alert, runbooks, a.Alert)
		}
	}
}

// grafanaVarRE matches a Grafana variable in a query: $name, ${name} or ${name:format}.
var grafanaVarRE = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)

// expandGrafana replaces Grafana's variables the way a rendered query has them: intervals by a
// duration, the others by a value.
func expandGrafana(q string) string {
	return grafanaVarRE.ReplaceAllStringFunc(q, func(v string) string {
		if name := grafanaVarRE.FindStringSubmatch(v)[1]; strings.HasPrefix(name, "__") {
			return "5m"
		}
		return "x"
	})
}

// labelValuesRE is the query of a Grafana query variable: label_values(selector, label).
var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// dashboardQueries returns every PromQL query of the dashboard, named by where it is, with
// Grafana's variables expanded: the panels' targets and the template variables' selectors.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	type panel struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		UID        string  `json:"uid"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readFile(t, dashboard), &d); err != nil {
		t.Fatalf("Decoding %s: %v", dashboard, err)
	}
	if d.UID == "" {
		t.Errorf("%s has no uid: Grafana would make a new dashboard on every load", dashboard)
	}
	queries := map[string]string{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("Panel %q: id %d is not unique", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("Panel %q does not query the dashboard's ${datasource}", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("Panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries["panel "+p.Title+" "+tg.RefID] = expandGrafana(tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("Variable %s: query %q, want label_values(selector, label)", v.Name, q)
			continue
		}
		queries["variable "+v.Name] = expandGrafana(m[1])
	}
	return queries
}

// metricNames parses a PromQL expression and returns the names of the metrics it selects; every
// selector must name its metric.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var unnamed []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			unnamed = append(unnamed, vs.String())
		}
		names = append(names, name)
		return nil
	})
	if len(unnamed) > 0 {
		return nil, fmt.Errorf("selectors %v name no metric", unnamed)
	}
	return names, nil
}

// readMetrics reads metricsFile: metric name to the source that exports it.
func readMetrics(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, line := range strings.Split(string(readFile(t, metricsFile)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !slices.Contains(metricSources, fields[0]) {
			t.Fatalf("%s:%d: %q, want one of %v and a metric name", metricsFile, i+1, line, metricSources)
		}
		out[fields[1]] = fields[0]
	}
	return out
}

// TestQueriesNameExportedMetrics parses every alert expression and every dashboard query with
// Prometheus' own parser, and checks that they name only metrics of metricsFile, which an
// integration test holds to real scrapes of the operator and the scheduler; and that every
// metric there is used.
func TestQueriesNameExportedMetrics(t *testing.T) {
	queries := dashboardQueries(t)
	pr, _ := readRules(t)
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			queries["alert "+r.Alert+r.Record] = r.Expr
		}
	}
	exported := readMetrics(t)
	used := map[string]bool{}
	for _, where := range slices.Sorted(maps.Keys(queries)) {
		names, err := metricNames(queries[where])
		if err != nil {
			t.Errorf("%s: %v\n%s", where, err, queries[where])
		}
		for _, name := range names {
			used[name] = true
			if exported[name] == "" {
				t.Errorf("%s names %s, which %s does not list as exported", where, name, metricsFile)
			}
		}
	}
	for name := range exported {
		if !used[name] {
			t.Errorf("%s lists %s, which no alert or dashboard query names", metricsFile, name)
		}
	}
	t.Logf("%d queries parse and name %d metrics, all exported", len(queries), len(used))
}

// TestMetricNamesRejectUnknownMetric shows that the check above can fail: a query of a metric
// nobody exports, and one that does not parse.
func TestMetricNamesRejectUnknownMetric(t *testing.T) {
	exported := readMetrics(t)
	names, err := metricNames(`sum(rate(scheduler_e2e_scheduling_duration_seconds_count[5m]))`)
	if err != nil || len(names) != 1 || exported[names[0]] != "" {
		t.Errorf("metricNames found %v (%v), want one name that %s does not list", names, err, metricsFile)
	}
	if _, err := metricNames(expandGrafana(`sum(rate(x{a=~"$profile"}[$__rate_interval])`)); err == nil {
		t.Error("The parser accepted a query with an unclosed parenthesis")
	}
	if _, err := metricNames(`sum({job="x"})`); err == nil {
		t.Error("metricNames accepted a selector without a metric name")
	}
}
