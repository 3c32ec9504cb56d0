package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// defaultNamespace is the namespace `make deploy` installs the operator into.
const defaultNamespace = "scheduler-profile-operator-system"

// runRender is `manager render -f profile.yaml`: it prints the KubeSchedulerConfiguration of each
// SchedulerProfile in the file, or the reasons the scheduler would refuse it, so that a pipeline
// can check a profile before it is merged. It returns the process exit code.
func runRender(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "File with one or more SchedulerProfiles (YAML or JSON); - reads standard input.")
	namespace := fs.String("namespace", defaultNamespace, "Namespace of the operator, where the scheduler's lease lives.")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: manager render -f profile.yaml [--namespace ns]")
		fmt.Fprintln(stderr, "Prints the KubeSchedulerConfiguration of each SchedulerProfile, or its errors (exit 1).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	// kube-scheduler's defaulting logs at info level through klog; the output here is the
	// configuration or its errors, nothing else.
	klog.SetLogger(logr.Discard())
	profiles, err := readProfiles(*file)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	code := 0
	for i, p := range profiles {
		cfg, err := profile.Render(p, profile.Settings{Namespace: *namespace})
		if err != nil {
			fmt.Fprintf(stderr, "SchedulerProfile %s: %v\n", p.Name, err)
			code = 1
			continue
		}
		if errs := profile.Validate(cfg.YAML); len(errs) > 0 {
			fmt.Fprintf(stderr, "SchedulerProfile %s is invalid:\n", p.Name)
			for _, e := range errs {
				fmt.Fprintf(stderr, "  %s\n", e.Error())
			}
			code = 1
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		fmt.Fprintf(stdout, "# SchedulerProfile %s, config hash %s\n", p.Name, cfg.Hash)
		_, _ = stdout.Write(cfg.YAML)
	}
	return code
}

// readProfiles reads every SchedulerProfile of a multi-document YAML file, strictly: a field the
// API does not have is an error, as it is for `kubectl apply`.
func readProfiles(file string) ([]*schedulingv1alpha1.SchedulerProfile, error) {
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close() //nolint:errcheck // opened for reading only: a failed Close loses nothing
		in = f
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var profiles []*schedulingv1alpha1.SchedulerProfile
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := yaml.UnmarshalStrict(doc, p); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, len(profiles)+1, err)
		}
		if p.APIVersion != schedulingv1alpha1.GroupVersion.String() || p.Kind != "SchedulerProfile" {
			return nil, fmt.Errorf("%s: document %d is %s %s, not a %s SchedulerProfile", file, len(profiles)+1, p.APIVersion, p.Kind, schedulingv1alpha1.GroupVersion)
		}
		if p.Name == "" {
			return nil, fmt.Errorf("%s: document %d: metadata.name is required", file, len(profiles)+1)
		}
		profiles = append(profiles, p)
	}
	if len(profiles) == 0 {
		return nil, fmt.Errorf("%s holds no SchedulerProfile", file)
	}
	return profiles, nil
}
