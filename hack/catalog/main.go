// Command catalog writes a file-based catalog (OLM's declarative config) of one OLM bundle: the
// package, its channels and the bundle, with the bundle's manifests inline as olm.bundle.object
// properties and no bundle image. OLM installs such a bundle straight from the catalog, with no
// unpack Job and no registry; `opm serve` serves the catalog's directory to a CatalogSource.
//
//	catalog --bundle-dir bundle --out bin/catalog/scheduler-profile-operator/catalog.json
//
// make catalog and make release run it on the bundle that make bundle wrote. The output depends
// only on the bundle's files: running it twice writes the same bytes.
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
	bundleDir := fs.String("bundle-dir", "bundle", "The bundle: manifests/ and metadata/annotations.yaml, as make bundle writes them.")
	out := fs.String("out", "", "The catalog file to write (JSON); its directory is what opm serve serves.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	b, err := readBundle(*bundleDir)
	if err != nil {
		return err
	}
	data, err := render(b)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}
