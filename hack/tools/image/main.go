// Command image builds a container image without a container engine (make image): one layer with
// the given files on a minimal distroless-like base (/etc/passwd and /etc/group naming root and
// nonroot 65532, /tmp, /home/nonroot), the user, entrypoint and labels given, written as a tarball
// that `ctr images import`, `docker load` and `podman load` read. The output is reproducible: every
// timestamp is the Unix epoch, so the same binaries give the same digest.
//
//	image --output bin/image.tar --tag scheduler-profile-operator:dev --user 65532:65532 \
//	  --entrypoint /manager --label org.opencontainers.image.title=scheduler-profile-operator \
//	  --file /manager=bin/manager --file /kube-scheduler=bin/kube-scheduler
//
// It prints the image's ID (the digest of its config, what a container runtime reports as the
// pod's imageID) and the digest of its manifest.
//
//	image --digest bin/image.tar
//
// prints the digest of the manifest of the image of an archive, as go-containerregistry reads it
// (`crane push` uploads that manifest): test/bundle checks the digest that make release pins
// against it.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// options is what one image is made of.
type options struct {
	output, tag, user string
	entrypoint        listFlag
	labels            listFlag
	files             listFlag
}

func main() {
	var o options
	digestOf := flag.String("digest", "", "print the manifest digest of the image of this archive, and do nothing else")
	flag.StringVar(&o.output, "output", "", "the image tarball to write")
	flag.StringVar(&o.tag, "tag", "", "the image reference recorded in the tarball, e.g. scheduler-profile-operator:dev")
	flag.StringVar(&o.user, "user", "65532:65532", "the user (uid:gid) the image runs as")
	flag.Var(&o.entrypoint, "entrypoint", "an entrypoint word (repeat for arguments)")
	flag.Var(&o.labels, "label", "a label KEY=VALUE (repeatable)")
	flag.Var(&o.files, "file", "a file IMAGEPATH=LOCALPATH, installed with mode 0755 (repeatable)")
	flag.Parse()
	if *digestOf != "" {
		if err := printDigest(*digestOf, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o options, out io.Writer) error {
	if o.output == "" || o.tag == "" || len(o.entrypoint) == 0 || len(o.files) == 0 {
		return errors.New("--output, --tag, --entrypoint and at least one --file are required")
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("--tag: %w", err)
	}
	labels, err := keyValues(o.labels)
	if err != nil {
		return fmt.Errorf("--label: %w", err)
	}
	files, err := keyValues(o.files)
	if err != nil {
		return fmt.Errorf("--file: %w", err)
	}
	img, err := build(files, v1.Config{
		User:       o.user,
		Entrypoint: o.entrypoint,
		Labels:     labels,
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
	})
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(o.output, ref, img); err != nil {
		return fmt.Errorf("writing %s: %w", o.output, err)
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s: %s\n  image ID %s\n  manifest %s\n", o.output, ref, id, digest)
	return err
}

// printDigest prints the manifest digest of the one image of the archive file.
func printDigest(file string, out io.Writer) error {
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, digest)
	return err
}

// keyValues parses KEY=VALUE words.
func keyValues(words []string) (map[string]string, error) {
	m := make(map[string]string, len(words))
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not KEY=VALUE", w)
		}
		m[k] = v
	}
	return m, nil
}

// build makes the image: the base files and the given ones in one layer, and the config.
func build(files map[string]string, cfg v1.Config) (v1.Image, error) {
	layerTar, err := layer(files)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = cfg
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	return mutate.ConfigFile(img, cf)
}

// epoch is every entry's modification time, so that the layer's digest depends on content only.
var epoch = time.Unix(0, 0).UTC()

// baseEntries is the part of gcr.io/distroless/static:nonroot that a static binary running as
// nonroot needs: the users and groups, a writable /tmp (for an emptyDir or a writable root) and
// nonroot's home.
var baseEntries = []struct {
	hdr  tar.Header
	body string
}{
	{tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
	{tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644},
		"root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
	{tar.Header{Name: "etc/group", Typeflag: tar.TypeReg, Mode: 0o644},
		"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
	{tar.Header{Name: "home/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
	{tar.Header{Name: "home/nonroot/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: 65532, Gid: 65532}, ""},
	{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, ""},
}

// layer returns an uncompressed tar of the base entries and the files, in a stable order.
func layer(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range baseEntries {
		hdr := e.hdr
		hdr.ModTime, hdr.Size = epoch, int64(len(e.body))
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		clean := strings.TrimPrefix(path.Clean("/"+p), "/")
		if strings.Contains(clean, "/") {
			return nil, fmt.Errorf("%s: only files in / are supported", p)
		}
		data, err := os.ReadFile(files[p])
		if err != nil {
			return nil, err
		}
		hdr := tar.Header{Name: clean, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
