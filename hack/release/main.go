// Command release writes the parts of a release that `make release` does not get from kustomize
// and hack/bundle: the image archive, whose manifest digest install.yaml and the bundle pin, and
// the seal of dist/ (the pins checked, the bundle packed, SHA256SUMS).
//
//	release image --from bin/image.tar --tag IMG --out dist/scheduler-profile-operator-image.tar
//	release seal --dir dist --image scheduler-profile-operator-image.tar --bundle scheduler-profile-operator-bundle --chart-rendered chart.yaml
//
// image repacks the `docker save` archive of make image as one that is also an OCI image layout,
// as Docker's own `docker save` does since Docker 25. From an OCI layout containerd (`ctr images
// import`, `kind load image-archive`) imports the manifest as it is; from a `docker save` archive
// alone it would write a manifest of its own, with another digest, and a pod that names the
// image by digest would not find it. The manifest is byte for byte the one go-containerregistry
// computes for the archive of make image, which `crane push` uploads: the digest is the same in a
// registry and on a node. image prints IMG@sha256:<digest>, the reference to pin.
//
// seal fails unless every image that install.yaml, the bundle and the Helm chart (as `helm
// template` renders the packaged chart with its defaults) name is that reference, packs the bundle
// directory into a tarball and writes SHA256SUMS, in `sha256sum -c` format, of every file of dist/.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

const usage = "usage: release image --from TAR --tag IMG --out TAR | release seal --dir DIR --image TAR --bundle DIR [--chart-rendered FILE]"

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "image":
		from := fs.String("from", "", "The `docker save` archive of make image.")
		tag := fs.String("tag", "", "The image's name and tag (IMG), e.g. registry.example/scheduler-profile-operator:v0.1.0.")
		out := fs.String("out", "", "The archive to write.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *from == "" || *tag == "" || *out == "" {
			return errors.New("image: --from, --tag and --out are required")
		}
		ref, err := writeImage(*from, *tag, *out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, ref)
		return err
	case "seal":
		dir := fs.String("dir", "dist", "The release directory.")
		image := fs.String("image", "", "The image archive, in --dir, that `release image` wrote.")
		install := fs.String("install", "install.yaml", "The manifests of the operator, in --dir.")
		bundle := fs.String("bundle", "", "The OLM bundle's directory, in --dir: bundle/ and bundle.Dockerfile. It is packed into <bundle>.tar.gz and removed.")
		chart := fs.String("chart-rendered", "", "The packaged Helm chart of --dir as `helm template` renders it with its defaults, a file outside --dir; empty for a release without a chart.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *image == "" || *bundle == "" {
			return errors.New("seal: --image and --bundle are required")
		}
		return seal(*dir, *image, *install, *bundle, *chart)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}
