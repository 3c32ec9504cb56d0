// Command chart writes the Helm chart charts/scheduler-profile-operator from the manifests of
// config/default, as kustomize builds them (make chart):
//
//	kustomize build config/default | go run ./hack/chart --version 0.2.0-dev --image ghcr.io/schedops/scheduler-profile-operator:v0.2.0-dev --out charts/scheduler-profile-operator
//
// Every object of config/default becomes one template, unchanged but for what the chart's values
// set: the operator's namespace is the release's, the Namespace object is left to Helm
// (--create-namespace) or to the admin; the image, the replica count, the resources and the
// flags of the operator's Deployment come from values.yaml, whose defaults are config/default's;
// the validating webhook (its configuration, Service and certificate Secret) is installed only
// with webhook.enabled, and the operator runs with --enable-webhook=false without it. The CRDs are
// templates too, so that `helm upgrade` updates them as `kubectl apply -f install.yaml` does.
// The names are config/default's: the operator finds its webhook objects by name, so a cluster
// holds one release.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Names of config/default that the chart replaces or looks for.
const (
	chartName          = "scheduler-profile-operator"
	defaultNamespace   = "scheduler-profile-operator-system"
	namePrefix         = "scheduler-profile-operator-"
	operatorDeployment = "scheduler-profile-operator-controller-manager"
	operatorContainer  = "manager"
	relatedImageEnv    = "RELATED_IMAGE_SCHEDULER"
	webhookService     = "scheduler-profile-operator-webhook-service"
	webhookSecret      = "scheduler-profile-operator-webhook-server-cert"
)

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("chart", flag.ContinueOnError)
	version := fs.String("version", "", "The chart's version (VERSION); its appVersion is v<version>.")
	image := fs.String("image", "", "The default image, repository:tag[@digest].")
	kubeVersion := fs.String("kube-version", "", "The oldest Kubernetes the chart installs on (Chart.yaml's kubeVersion), e.g. 1.37.")
	out := fs.String("out", "", "The chart's directory; it is written from scratch.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *image == "" || *out == "" || *kubeVersion == "" {
		return errors.New("--version, --image, --kube-version and --out are required")
	}
	objs, err := readObjects(stdin)
	if err != nil {
		return err
	}
	files, err := render(objs, chartInfo{version: *version, image: *image, kubeVersion: *kubeVersion})
	if err != nil {
		return err
	}
	return writeDir(*out, files)
}

// chartInfo is what the chart says of itself.
type chartInfo struct {
	version, image, kubeVersion string
}

// readObjects decodes the YAML documents of r.
func readObjects(r io.Reader) ([]map[string]any, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objs []map[string]any
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
}

// render returns the chart's files by path.
func render(objs []map[string]any, info chartInfo) (map[string][]byte, error) {
	files := map[string][]byte{}
	// resources are those of the operator's container in config/default.
	var resources any
	var deployment bool
	for _, obj := range objs {
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if kind == "Namespace" {
			continue
		}
		replaceNamespace(obj)
		addLabels(meta)
		var wrap string
		switch {
		case kind == "CustomResourceDefinition":
			annotations, _ := meta["annotations"].(map[string]any)
			if annotations == nil {
				annotations = map[string]any{}
				meta["annotations"] = annotations
			}
			annotations[keySentinel("crdKeep")] = nil
		case kind == "Deployment" && name == operatorDeployment:
			var err error
			if resources, err = templateDeployment(obj); err != nil {
				return nil, err
			}
			deployment = true
		case kind == "ValidatingWebhookConfiguration",
			kind == "Service" && name == webhookService,
			kind == "Secret" && name == webhookSecret:
			wrap = ".Values.webhook.enabled"
		}
		body, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		text := expand(string(body))
		if wrap != "" {
			text = "{{- if " + wrap + " }}\n" + text + "{{- end }}\n"
		}
		path := filepath.Join("templates", templateName(kind, name, meta))
		if kind == "CustomResourceDefinition" {
			path = filepath.Join("templates", "crds", name+".yaml")
		}
		if _, dup := files[path]; dup {
			return nil, fmt.Errorf("two objects would be written to %s", path)
		}
		files[path] = []byte(header + text)
	}
	if !deployment {
		return nil, fmt.Errorf("no Deployment %s in the input", operatorDeployment)
	}
	values, err := valuesFile(resources, info)
	if err != nil {
		return nil, err
	}
	files["values.yaml"] = values
	files["Chart.yaml"] = []byte(fmt.Sprintf(chartYAML, info.version, info.version, info.kubeVersion))
	files[filepath.Join("templates", "_helpers.tpl")] = []byte(helpers)
	files[filepath.Join("templates", "NOTES.txt")] = []byte(notes)
	files[".helmignore"] = []byte("# Generated by make chart.\n*.orig\n*.rej\n")
	return files, nil
}

// header marks every template as generated.
const header = "# Generated by make chart from config/default (hack/chart); do not edit.\n"

// templateName is the file of an object: its kind and its name without the common prefix, and
// its namespace when that is not the release's.
func templateName(kind, name string, meta map[string]any) string {
	base := strings.ToLower(kind) + "-" + strings.TrimPrefix(name, namePrefix)
	if ns, _ := meta["namespace"].(string); ns != "" && ns != releaseNamespace {
		base += "-" + ns
	}
	return base + ".yaml"
}

// releaseNamespace replaces config/default's namespace everywhere it is named: objects'
// namespaces, binding subjects, the webhook's Service reference.
const releaseNamespace = "{{ .Release.Namespace }}"

func replaceNamespace(node any) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if s, ok := v.(string); ok && s == defaultNamespace {
				n[k] = releaseNamespace
				continue
			}
			replaceNamespace(v)
		}
	case []any:
		for _, v := range n {
			replaceNamespace(v)
		}
	}
}

// addLabels adds the chart's labels (Helm's conventional ones) to an object's own labels; pod
// templates and selectors keep config/default's, so that an upgrade from it changes no selector.
func addLabels(meta map[string]any) {
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[keySentinel("labels")] = nil
}

// templateDeployment puts the values into the operator's Deployment.
// It returns the container's resources of config/default, the values' defaults.
func templateDeployment(obj map[string]any) (any, error) {
	spec, _ := obj["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	podSpec, _ := template["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	if spec == nil || podSpec == nil {
		return nil, errors.New("the operator's Deployment has no pod template")
	}
	spec["replicas"] = scalarSentinel("replicas")
	for _, c := range containers {
		c, _ := c.(map[string]any)
		if c["name"] != operatorContainer {
			continue
		}
		resources := c["resources"]
		c["image"] = scalarSentinel("image")
		c[keySentinel("pullPolicy")] = nil
		delete(c, "resources")
		c[keySentinel("resources")] = nil
		args, _ := c["args"].([]any)
		c["args"] = append(args, scalarSentinel("flags"))
		env, _ := c["env"].([]any)
		found := false
		for _, e := range env {
			e, _ := e.(map[string]any)
			if e["name"] == relatedImageEnv {
				e["value"] = scalarSentinel("image")
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("the container %s has no %s", operatorContainer, relatedImageEnv)
		}
		return resources, nil
	}
	return nil, fmt.Errorf("the operator's Deployment has no container %s", operatorContainer)
}

// Sentinels mark where a template expression goes: a scalar sentinel is a value replaced in
// place, a key sentinel a whole line replaced by lines of template at its indentation. Key
// sentinels sort after every key of config/default, so that none is the first key of a list item.
func scalarSentinel(name string) string { return "__helm_" + name + "__" }
func keySentinel(name string) string    { return "zzhelm_" + name }

var (
	keyLine   = regexp.MustCompile(`(?m)^( *)zzhelm_(\w+): null\n`)
	scalarArg = regexp.MustCompile(`(?m)^( *)- __helm_flags__\n`)
)

// scalars are the expressions of the scalar sentinels.
var scalars = map[string]string{
	"replicas": "{{ .Values.replicas }}",
	"image":    `{{ include "scheduler-profile-operator.image" . | quote }}`,
}

// blocks are the lines of the key sentinels; %[1]d is the indentation of the sentinel's line.
var blocks = map[string][]string{
	"labels": {`{{- include "scheduler-profile-operator.labels" . | nindent %[1]d }}`},
	"crdKeep": {
		`{{- if .Values.crds.keep }}`,
		`helm.sh/resource-policy: keep`,
		`{{- end }}`,
	},
	"pullPolicy": {
		`{{- with .Values.image.pullPolicy }}`,
		`imagePullPolicy: {{ . }}`,
		`{{- end }}`,
	},
	"resources": {
		`resources:`,
		`  {{- toYaml .Values.resources | nindent %[2]d }}`,
	},
}

// flagLines are the operator's flags from the values, after config/default's.
var flagLines = []string{
	`{{- if not .Values.webhook.enabled }}`,
	`- --enable-webhook=false`,
	`{{- end }}`,
	`{{- range $flag, $value := .Values.flags }}`,
	`- {{ printf "--%s=%v" $flag $value | quote }}`,
	`{{- end }}`,
}

// expand replaces the sentinels of a marshalled object by template expressions.
func expand(text string) string {
	text = keyLine.ReplaceAllStringFunc(text, func(line string) string {
		m := keyLine.FindStringSubmatch(line)
		indent := len(m[1])
		var b strings.Builder
		for _, l := range blocks[m[2]] {
			if strings.Contains(l, "%[") {
				l = fmt.Sprintf(l, indent, indent+2)
			}
			b.WriteString(strings.Repeat(" ", indent) + l + "\n")
		}
		return b.String()
	})
	text = scalarArg.ReplaceAllStringFunc(text, func(line string) string {
		indent := scalarArg.FindStringSubmatch(line)[1]
		var b strings.Builder
		for _, l := range flagLines {
			b.WriteString(indent + l + "\n")
		}
		return b.String()
	})
	for name, expr := range scalars {
		text = strings.ReplaceAll(text, scalarSentinel(name), expr)
	}
	return text
}

// valuesFile is values.yaml: the defaults are config/default's.
func valuesFile(resources any, info chartInfo) ([]byte, error) {
	res, err := yaml.Marshal(resources)
	if err != nil {
		return nil, err
	}
	repo, tag, digest := splitImage(info.image)
	return []byte(fmt.Sprintf(valuesYAML, repo, tag, digest, indent(string(res), "  "))), nil
}

// splitImage splits repository[:tag][@digest]; a port in the repository's registry is no tag.
func splitImage(image string) (repo, tag, digest string) {
	repo, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// writeDir writes files into dir, removing whatever else it held.
func writeDir(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, bytes.TrimLeft(files[p], "\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
