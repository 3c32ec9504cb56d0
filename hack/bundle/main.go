// Command bundle writes the OLM bundle of the operator: bundle/manifests (the
// ClusterServiceVersion and the CRD), bundle/metadata/annotations.yaml and bundle.Dockerfile.
//
// It reads the output of `kustomize build config/manifests` on standard input, so that the bundle
// holds exactly what `make deploy` installs; `make bundle VERSION=x.y.z IMG=...` runs it. The
// output depends only on the input and the flags: running it twice changes nothing.
//
// The CSV is built with the types of github.com/operator-framework/api, which OLM itself decodes
// it with; operator-sdk is not needed. Neither the manager nor the scheduler links that module
// (test/bundle checks).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	var o options
	var channels, bundleDir, dockerfile string
	fs.StringVar(&o.Version, "version", "", "The operator version (semver, without a leading v).")
	fs.StringVar(&o.Replaces, "replaces", "", "The version this one upgrades from (the previous release), which the CSV's spec.replaces names; empty for none.")
	fs.StringVar(&o.Package, "package", "scheduler-profile-operator", "The OLM package name.")
	fs.StringVar(&channels, "channels", "", "The channels of the bundle, comma-separated.")
	fs.StringVar(&o.DefaultChannel, "default-channel", "", "The default channel of the package.")
	fs.StringVar(&bundleDir, "bundle-dir", "bundle", "Where to write manifests/ and metadata/.")
	fs.StringVar(&dockerfile, "dockerfile", "bundle.Dockerfile", "Where to write the bundle image's Dockerfile.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if channels != "" {
		o.Channels = strings.Split(channels, ",")
	}

	objs, err := decodeObjects(stdin)
	if err != nil {
		return err
	}
	out, err := generate(objs, o)
	if err != nil {
		return err
	}
	return write(out, bundleDir, dockerfile)
}

// write replaces the bundle's generated directories, so that a file whose object went away does
// not linger, and writes the Dockerfile.
func write(out *output, bundleDir, dockerfile string) error {
	for _, dir := range []string{manifestsDir, metadataDir} {
		if err := os.RemoveAll(filepath.Join(bundleDir, dir)); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(out.files))
	for name := range out.files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(bundleDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, out.files[name], 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(dockerfile, out.dockerfile, 0o644)
}
