package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pinned = testTag + "@" + testDigest

// deployment is a Deployment whose container runs image and names scheduler in RELATED_IMAGE_SCHEDULER.
func deployment(image, scheduler string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller-manager
spec:
  template:
    spec:
      containers:
      - name: manager
        image: %s
        env:
        - name: OPERATOR_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: RELATED_IMAGE_SCHEDULER
          value: %s
`, image, scheduler)
}

func TestCheckPinned(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          containers:
            type: array
          image:
            type: string
`
	const csv = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: op.v0.1.0
  annotations:
    containerImage: %s
spec:
  install:
    spec:
      deployments:
      - name: controller-manager
        spec:
          template:
            spec:
              containers:
              - name: manager
                image: %s
  relatedImages:
  - name: manager
    image: %s
`
	cases := []struct {
		name     string
		yaml     string
		found    int
		problems []string
	}{
		{"a pinned Deployment", deployment(pinned, pinned), 2, nil},
		{"the container not pinned", deployment(testTag, pinned), 2, []string{
			fmt.Sprintf("Deployment controller-manager: spec.template.spec.containers[0].image is %q", testTag),
		}},
		{"RELATED_IMAGE_SCHEDULER not pinned", deployment(pinned, testTag), 2, []string{
			fmt.Sprintf("Deployment controller-manager: spec.template.spec.containers[0].env[1](RELATED_IMAGE_SCHEDULER) is %q", testTag),
		}},
		{"an init container", strings.Replace(deployment(pinned, pinned), "      containers:", "      initContainers:\n      - name: init\n        image: busybox:1\n      containers:", 1), 3, []string{
			`Deployment controller-manager: spec.template.spec.initContainers[0].image is "busybox:1"`,
		}},
		{"a Deployment and a CRD", deployment(pinned, pinned) + "---\n" + crd, 2, nil},
		{"a CRD only", crd, 0, nil},
		{"a pinned CSV", fmt.Sprintf(csv, pinned, pinned, pinned), 3, nil},
		{"a CSV with its relatedImages and containerImage not pinned", fmt.Sprintf(csv, testTag, pinned, testTag), 3, []string{
			fmt.Sprintf("ClusterServiceVersion op.v0.1.0: metadata.annotations.containerImage is %q", testTag),
			fmt.Sprintf("ClusterServiceVersion op.v0.1.0: spec.relatedImages[0].image is %q", testTag),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			found, problems, err := checkPinned([]byte(tc.yaml), pinned)
			if err != nil {
				t.Fatal(err)
			}
			if found != tc.found {
				t.Errorf("Found %d image references, want %d", found, tc.found)
			}
			if diff := cmp.Diff(tc.problems, problems); diff != "" {
				t.Errorf("Problems (-want +got):\n%s", diff)
			}
		})
	}
}

// writeDist writes what make release puts into dist/ before seal: the image archive, install.yaml
// with a Deployment of the images given, and the bundle's directory.
func writeDist(t *testing.T, image, scheduler string) string {
	t.Helper()
	dir := t.TempDir()
	img, err := readDockerArchive(bytes.NewReader(testDockerArchive(t)))
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if _, err := writeArchive(&archive, img, testTag); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"image.tar":                            archive.String(),
		"install.yaml":                         deployment(image, scheduler),
		"op-bundle/bundle.Dockerfile":          "FROM scratch\n",
		"op-bundle/bundle/manifests/csv.yaml":  deployment(pinned, pinned),
		"op-bundle/bundle/metadata/notes.yaml": "annotations: {}\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSeal: seal packs the bundle, removes its directory and writes the checksums of every file,
// which `sha256sum -c` accepts.
func TestSeal(t *testing.T) {
	dir := writeDist(t, pinned, pinned)
	if err := run([]string{"seal", "--dir", dir, "--image", "image.tar", "--bundle", "op-bundle"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"SHA256SUMS", "image.tar", "install.yaml", "op-bundle.tar.gz"}, names); diff != "" {
		t.Errorf("Files of the release (-want +got):\n%s", diff)
	}

	var want strings.Builder
	for _, name := range []string{"image.tar", "install.yaml", "op-bundle.tar.gz"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&want, "%x  %s\n", sha256.Sum256(data), name)
	}
	sums, err := os.ReadFile(filepath.Join(dir, sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(sums)); diff != "" {
		t.Errorf("SHA256SUMS (-want +got):\n%s", diff)
	}
	if sha256sum, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command(sha256sum, "--check", "--strict", sumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum --check: %v\n%s", err, out)
		}
	}

	got := tarEntries(t, filepath.Join(dir, "op-bundle.tar.gz"))
	wantEntries := []string{
		"op-bundle/ 755", "op-bundle/bundle/ 755", "op-bundle/bundle/manifests/ 755", "op-bundle/bundle/manifests/csv.yaml 644",
		"op-bundle/bundle/metadata/ 755", "op-bundle/bundle/metadata/notes.yaml 644", "op-bundle/bundle.Dockerfile 644",
	}
	if diff := cmp.Diff(wantEntries, got); diff != "" {
		t.Errorf("Entries of the bundle's tarball (-want +got):\n%s", diff)
	}
}

// tarEntries lists the names and modes of a gzipped tarball, failing unless every entry is owned by
// root at the epoch.
func tarEntries(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(epoch) {
			t.Errorf("%s: uid %d gid %d time %s, want root's at the epoch", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime)
		}
		entries = append(entries, fmt.Sprintf("%s %o", hdr.Name, hdr.Mode))
	}
}

// TestSealRefuses: a release whose install.yaml or bundle runs another image than the archive's,
// or whose bundle is missing, is not sealed: no checksums are written.
func TestSealRefuses(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"install.yaml runs the tag", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "install.yaml"), deployment(testTag, pinned))
		}, "images not pinned to " + pinned},
		{"install.yaml runs another digest", func(t *testing.T, dir string) {
			other := testTag + "@sha256:" + strings.Repeat("1", 64)
			write(t, filepath.Join(dir, "install.yaml"), deployment(other, other))
		}, "images not pinned to " + pinned},
		{"install.yaml names no image", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "install.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n")
		}, "name no image"},
		{"the bundle runs the tag", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "op-bundle", "bundle", "manifests", "csv.yaml"), deployment(testTag, testTag))
		}, "csv.yaml: Deployment controller-manager"},
		{"no bundle", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "op-bundle")); err != nil {
				t.Fatal(err)
			}
		}, "has no bundle/manifests/*.yaml"},
		{"a directory left in the release", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "is not a file"},
		{"the chart runs the tag", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "..", "chart.yaml"), deployment(testTag, pinned))
		}, "the Helm chart: images not pinned to " + pinned},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDist(t, pinned, pinned)
			// The chart as helm template renders it, outside the release.
			chart := filepath.Join(dir, "..", "chart.yaml")
			write(t, chart, deployment(pinned, pinned))
			tc.change(t, dir)
			err := seal(dir, "image.tar", "install.yaml", "op-bundle", chart)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("seal: %v, want an error with %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, sumsFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written: %v", sumsFile, err)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPackDirReproducible: the same files give the same tarball, whatever their times.
func TestPackDirReproducible(t *testing.T) {
	dir := writeDist(t, pinned, pinned)
	src := filepath.Join(dir, "op-bundle")
	first, second := filepath.Join(dir, "first.tar.gz"), filepath.Join(dir, "second.tar.gz")
	if err := packDir(src, first); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(src, "bundle.Dockerfile"), epoch.AddDate(30, 0, 0), epoch.AddDate(30, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := packDir(src, second); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("Two tarballs of the same files differ")
	}
}
