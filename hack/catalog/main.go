// Command catalog writes a file-based catalog (OLM's declarative config) of OLM bundles of one
// package: the package, its channels and the bundles, with each bundle's manifests inline as
// olm.bundle.object properties and no bundle image. OLM installs such a bundle straight from the catalog, with no
// unpack Job and no registry; `opm serve` serves the catalog's directory to a CatalogSource.
//
//	catalog --bundle-dir bundle --out bin/catalog/scheduler-profile-operator/catalog.json
//
// make catalog and make release run it on the bundle that make bundle wrote; make test-olm on the
// previous release's bundle and this one (--bundle-dir twice, oldest first), so that OLM can
// upgrade from the one to the other. The output depends only on the bundles' files: running it
// twice writes the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	var bundleDirs []string
	fs.Func("bundle-dir", "A bundle: manifests/ and metadata/annotations.yaml, as make bundle writes them (default bundle). Repeat it for several versions of the package, oldest first.", func(dir string) error {
		bundleDirs = append(bundleDirs, dir)
		return nil
	})
	out := fs.String("out", "", "The catalog file to write (JSON); its directory is what opm serve serves.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	if len(bundleDirs) == 0 {
		bundleDirs = []string{"bundle"}
	}
	var bundles []*bundle
	for _, dir := range bundleDirs {
		b, err := readBundle(dir)
		if err != nil {
			return err
		}
		bundles = append(bundles, b)
	}
	data, err := render(bundles...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}
