package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testConfig and testLayer make a small image. Only its first bytes make testLayer a gzip stream:
// the release, like go-containerregistry, hashes a layer as it is stored and reads no more of it
// than the magic number that says it is compressed.
const (
	testConfig = `{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:0000000000000000000000000000000000000000000000000000000000000000"]},"config":{"User":"65532:65532"}}`
	testLayer  = "\x1f\x8b\x08 a layer"
	testTag    = "registry.example/scheduler-profile-operator:v0.1.0"
	// testDigest is the manifest digest that go-containerregistry v0.22.1 (`image --digest`, in
	// hack/tools/image) gives the `docker save` archive of testDockerArchive.
	testDigest = "sha256:6100e56c3e5379cb36309e75183250e7efca1af5a516747f3511a248359d7b23"
)

// tarOf is a tar archive of the files, in the order of their names.
func tarOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeFile(tw, name, files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dockerFiles are the files of the `docker save` archive of the test image, as
// go-containerregistry's tarball package (make image) names them.
func dockerFiles() map[string][]byte {
	configName := digestOf([]byte(testConfig))
	layerName := strings.TrimPrefix(digestOf([]byte(testLayer)), "sha256:") + ".tar.gz"
	return map[string][]byte{
		"manifest.json": mustJSON([]dockerImage{{Config: configName, RepoTags: []string{"scheduler-profile-operator:dev"}, Layers: []string{layerName}}}),
		configName:      []byte(testConfig),
		layerName:       []byte(testLayer),
	}
}

func testDockerArchive(t *testing.T) []byte { return tarOf(t, dockerFiles()) }

// TestWriteArchive: the release archive of the test image has go-containerregistry's manifest
// digest, reads back as that image named testTag, both as an OCI layout and as a `docker save`
// archive, and is the same bytes every time.
func TestWriteArchive(t *testing.T) {
	img, err := readDockerArchive(bytes.NewReader(testDockerArchive(t)))
	if err != nil {
		t.Fatal(err)
	}
	var first, second bytes.Buffer
	digest, err := writeArchive(&first, img, testTag)
	if err != nil {
		t.Fatal(err)
	}
	if digest != testDigest {
		t.Errorf("The manifest digest is %s, go-containerregistry's %s", digest, testDigest)
	}
	if _, err := writeArchive(&second, img, testTag); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("Two archives of the same image differ")
	}

	ref, err := readRelease(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatalf("readRelease: %v", err)
	}
	if want := testTag + "@" + testDigest; ref != want {
		t.Errorf("readRelease: %s, want %s", ref, want)
	}
	files, err := readTar(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var idx index
	if err := json.Unmarshal(files[indexFile], &idx); err != nil {
		t.Fatal(err)
	}
	wantIndex := index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{{
		MediaType: mediaTypeManifest, Size: int64(len(files[blobPath(testDigest)])), Digest: testDigest,
		Annotations: map[string]string{annotationImageName: testTag, annotationRefName: "v0.1.0"},
		Platform:    &platform{Architecture: "amd64", OS: "linux"},
	}}}
	if diff := cmp.Diff(wantIndex, idx, cmp.AllowUnexported()); diff != "" {
		t.Errorf("index.json (-want +got):\n%s", diff)
	}
	if got := string(files[layoutFile]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout is %s", got)
	}
	// What `docker load` and go-containerregistry read: manifest.json and the blobs it names.
	again, err := readDockerArchive(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatalf("Reading the release archive as a docker save archive: %v", err)
	}
	if diff := cmp.Diff(img, again, cmp.AllowUnexported(image{})); diff != "" {
		t.Errorf("The image of the release archive, read as a docker save archive (-want +got):\n%s", diff)
	}
}

// TestManifestBytes: the manifest is go-containerregistry's, field for field and in its order.
func TestManifestBytes(t *testing.T) {
	img, err := readDockerArchive(bytes.NewReader(testDockerArchive(t)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := img.manifest()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",` +
		`"config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":` + itoa(len(testConfig)) + `,"digest":"` + digestOf([]byte(testConfig)) + `"},` +
		`"layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":` + itoa(len(testLayer)) + `,"digest":"` + digestOf([]byte(testLayer)) + `"}]}`
	if string(got) != want {
		t.Errorf("manifest:\n got %s\nwant %s", got, want)
	}
}

func itoa(n int) string { return string(mustJSON(n)) }

func TestReadDockerArchiveRejects(t *testing.T) {
	cases := []struct {
		name   string
		change func(files map[string][]byte)
		want   string
	}{
		{"two images", func(files map[string][]byte) {
			var images []dockerImage
			_ = json.Unmarshal(files["manifest.json"], &images)
			files["manifest.json"] = mustJSON(append(images, images[0]))
		}, "lists 2 images"},
		{"a missing layer", func(files map[string][]byte) {
			for name := range files {
				if strings.HasSuffix(name, ".tar.gz") {
					delete(files, name)
				}
			}
		}, "is not in the archive"},
		{"an uncompressed layer", func(files map[string][]byte) {
			for name := range files {
				if strings.HasSuffix(name, ".tar.gz") {
					files[name] = []byte("a tar")
				}
			}
		}, "is not gzipped"},
		{"more layers than diff_ids", func(files map[string][]byte) {
			var images []dockerImage
			_ = json.Unmarshal(files["manifest.json"], &images)
			images[0].Layers = append(images[0].Layers, images[0].Layers[0])
			files["manifest.json"] = mustJSON(images)
		}, "2 layers and 1 diff_ids"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := dockerFiles()
			tc.change(files)
			_, err := readDockerArchive(bytes.NewReader(tarOf(t, files)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readDockerArchive: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestReadReleaseRejects: seal trusts the digest of an archive only if its blobs have the
// digests they are stored under and its two descriptions name the same image.
func TestReadReleaseRejects(t *testing.T) {
	img, err := readDockerArchive(bytes.NewReader(testDockerArchive(t)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := writeArchive(&buf, img, testTag); err != nil {
		t.Fatal(err)
	}
	layer := blobPath(digestOf([]byte(testLayer)))
	cases := []struct {
		name   string
		change func(files map[string][]byte)
		want   string
	}{
		{"a layer changed", func(files map[string][]byte) { files[layer] = []byte("\x1f\x8b\x08 another layer") }, "has digest"},
		{"the manifest missing", func(files map[string][]byte) { delete(files, blobPath(testDigest)) }, "is not in the archive"},
		{"manifest.json with another tag", func(files map[string][]byte) {
			files[dockerManifestFile] = bytes.ReplaceAll(files[dockerManifestFile], []byte("v0.1.0"), []byte("v0.2.0"))
		}, "the index names the image"},
		{"manifest.json with another layer", func(files map[string][]byte) {
			files[dockerManifestFile] = bytes.ReplaceAll(files[dockerManifestFile], []byte(layer), []byte(blobPath(testDigest)))
		}, "the index's manifest"},
		{"two manifests in the index", func(files map[string][]byte) {
			var idx index
			_ = json.Unmarshal(files[indexFile], &idx)
			idx.Manifests = append(idx.Manifests, idx.Manifests[0])
			files[indexFile] = mustJSON(idx)
		}, "lists 2 manifests"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files, err := readTar(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			tc.change(files)
			_, err = readRelease(bytes.NewReader(tarOf(t, files)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readRelease: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestCheckTag(t *testing.T) {
	cases := []struct {
		ref string
		ok  bool
	}{
		{"registry.example/scheduler-profile-operator:v0.1.0", true},
		{"scheduler-profile-operator:dev", true},
		{"localhost:5000/scheduler-profile-operator:v0.1.0", true},
		{"localhost:5000/scheduler-profile-operator", false},
		{"registry.example/scheduler-profile-operator", false},
		{"registry.example/scheduler-profile-operator:v0.1.0@sha256:" + strings.Repeat("0", 64), false},
		{"registry.example/scheduler-profile-operator:-v1", false},
		{":v1", false},
	}
	for _, tc := range cases {
		if err := checkTag(tc.ref); (err == nil) != tc.ok {
			t.Errorf("checkTag(%q): %v, want ok %v", tc.ref, err, tc.ok)
		}
	}
}

func TestFullName(t *testing.T) {
	cases := map[string]string{
		"scheduler-profile-operator:dev":                         "docker.io/library/scheduler-profile-operator:dev",
		"schedops/scheduler-profile-operator:v1":                 "docker.io/schedops/scheduler-profile-operator:v1",
		"docker.io/scheduler-profile-operator:v1":                "docker.io/library/scheduler-profile-operator:v1",
		"index.docker.io/schedops/scheduler-profile-operator:v1": "docker.io/schedops/scheduler-profile-operator:v1",
		"registry.example/scheduler-profile-operator:v1":         "registry.example/scheduler-profile-operator:v1",
		"localhost:5000/scheduler-profile-operator:v1":           "localhost:5000/scheduler-profile-operator:v1",
		"localhost/scheduler-profile-operator:v1":                "localhost/scheduler-profile-operator:v1",
		"ghcr.io/schedops/scheduler-profile-operator:v0.1.0":     "ghcr.io/schedops/scheduler-profile-operator:v0.1.0",
	}
	for ref, want := range cases {
		if got := fullName(ref); got != want {
			t.Errorf("fullName(%q) = %q, want %q", ref, got, want)
		}
	}
}

// TestWriteImage: the command's image step, from a file to a file, prints the pinned reference.
func TestWriteImage(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(from, testDockerArchive(t), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"image", "--from", from, "--tag", testTag, "--out", filepath.Join(dir, "release.tar")}, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), testTag+"@"+testDigest+"\n"; got != want {
		t.Errorf("release image printed %q, want %q", got, want)
	}
	if err := run([]string{"image", "--from", from, "--tag", testTag + "@" + testDigest, "--out", filepath.Join(dir, "again.tar")}, &out); err == nil {
		t.Error("release image accepted a tag that has a digest already")
	}
}
