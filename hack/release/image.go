package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// Media types of the manifest that go-containerregistry computes for a `docker save` archive of
// gzipped layers, and of the OCI layout's index.
const (
	mediaTypeManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeConfig   = "application/vnd.docker.container.image.v1+json"
	mediaTypeLayer    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
)

// Annotations of the index's manifest: containerd names the imported image after the first,
// Docker and skopeo select an image of a layout by the second, its tag.
const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// Files of an archive besides its blobs.
const (
	layoutFile         = "oci-layout"
	indexFile          = "index.json"
	dockerManifestFile = "manifest.json"
	blobsDir           = "blobs/sha256/"
)

// descriptor is an OCI content descriptor. Its first three fields are in go-containerregistry's
// order: the manifest's bytes, and so its digest, depend on it.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Size        int64             `json:"size"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// manifest is a Docker image manifest (schema 2), as go-containerregistry writes it.
type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// index is the OCI layout's index.json.
type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// dockerImage is an entry of a `docker save` archive's manifest.json.
type dockerImage struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// image is the one image of an archive: its config and gzipped layers, as stored.
type image struct {
	config []byte
	layers [][]byte
}

// writeImage reads the `docker save` archive from, writes the release archive of its image named
// tag to out and returns tag@<manifest digest>.
func writeImage(from, tag, out string) (string, error) {
	if err := checkTag(tag); err != nil {
		return "", err
	}
	f, err := os.Open(from)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	img, err := readDockerArchive(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	var buf bytes.Buffer
	digest, err := writeArchive(&buf, img, tag)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return tag + "@" + digest, nil
}

// tagPattern is the syntax of a tag.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// checkTag fails unless ref is a name with a tag and without a digest: the release adds the
// digest itself. The name's own syntax is left to the tools that read it.
func checkTag(ref string) error {
	if strings.Contains(ref, "@") {
		return fmt.Errorf("%q already has a digest: name the image with a tag, the release adds the digest", ref)
	}
	i := strings.LastIndex(ref, ":")
	if i <= 0 || i < strings.LastIndex(ref, "/") || !tagPattern.MatchString(ref[i+1:]) || strings.ContainsAny(ref, " \t\n") {
		return fmt.Errorf("%q is not an image name with a tag, e.g. registry.example/scheduler-profile-operator:v0.1.0", ref)
	}
	return nil
}

// gzipMagic starts a gzip stream of deflated data, as go-containerregistry detects one.
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// readDockerArchive reads the one image of a `docker save` archive, whose layers must be gzipped
// (make image's are): uncompressed layers would be compressed on the way to a registry, and the
// digest would change.
func readDockerArchive(r io.Reader) (*image, error) {
	files, err := readTar(r)
	if err != nil {
		return nil, err
	}
	var images []dockerImage
	if err := json.Unmarshal(files[dockerManifestFile], &images); err != nil {
		return nil, fmt.Errorf("%s: %w", dockerManifestFile, err)
	}
	if len(images) != 1 {
		return nil, fmt.Errorf("%s lists %d images, want 1", dockerManifestFile, len(images))
	}
	entry := images[0]
	img := &image{config: files[entry.Config]}
	if img.config == nil {
		return nil, fmt.Errorf("the config %q is not in the archive", entry.Config)
	}
	var cfg struct {
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(img.config, &cfg); err != nil {
		return nil, fmt.Errorf("the config: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) != len(entry.Layers) || len(entry.Layers) == 0 {
		return nil, fmt.Errorf("%d layers and %d diff_ids in the config, want as many and at least one", len(entry.Layers), len(cfg.RootFS.DiffIDs))
	}
	for _, name := range entry.Layers {
		layer := files[name]
		if layer == nil {
			return nil, fmt.Errorf("the layer %q is not in the archive", name)
		}
		if !bytes.HasPrefix(layer, gzipMagic) {
			return nil, fmt.Errorf("the layer %q is not gzipped", name)
		}
		img.layers = append(img.layers, layer)
	}
	return img, nil
}

// manifest is the image's manifest as go-containerregistry computes it for its archive.
func (img *image) manifest() ([]byte, error) {
	m := manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: blobDescriptor(mediaTypeConfig, img.config)}
	for _, layer := range img.layers {
		m.Layers = append(m.Layers, blobDescriptor(mediaTypeLayer, layer))
	}
	return json.Marshal(m)
}

// platform is the image's, from its config, for the index.
func (img *image) platform() (*platform, error) {
	var p platform
	if err := json.Unmarshal(img.config, &p); err != nil {
		return nil, fmt.Errorf("the config: %w", err)
	}
	if p.OS == "" || p.Architecture == "" {
		return nil, errors.New("the config names no os and architecture")
	}
	return &p, nil
}

func blobDescriptor(mediaType string, data []byte) descriptor {
	return descriptor{MediaType: mediaType, Size: int64(len(data)), Digest: digestOf(data)}
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blobPath(digest string) string { return blobsDir + strings.TrimPrefix(digest, "sha256:") }

// writeArchive writes img named tag as an archive that is both an OCI image layout (oci-layout,
// index.json, blobs/sha256/) and a `docker save` archive (manifest.json naming the same blobs),
// and returns the digest of its manifest. Every entry has the same owner, mode and time: the same
// image gives the same bytes.
func writeArchive(w io.Writer, img *image, tag string) (string, error) {
	raw, err := img.manifest()
	if err != nil {
		return "", err
	}
	plat, err := img.platform()
	if err != nil {
		return "", err
	}
	digest := digestOf(raw)
	md := descriptor{MediaType: mediaTypeManifest, Size: int64(len(raw)), Digest: digest, Platform: plat,
		Annotations: map[string]string{annotationImageName: fullName(tag), annotationRefName: tag[strings.LastIndex(tag, ":")+1:]}}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{md}})
	if err != nil {
		return "", err
	}
	docker := dockerImage{Config: blobPath(digestOf(img.config)), RepoTags: []string{tag}}
	for _, layer := range img.layers {
		docker.Layers = append(docker.Layers, blobPath(digestOf(layer)))
	}
	dockerJSON, err := json.Marshal([]dockerImage{docker})
	if err != nil {
		return "", err
	}

	tw := tar.NewWriter(w)
	written := map[string]bool{}
	add := func(name string, data []byte) error {
		if written[name] {
			return nil
		}
		written[name] = true
		return writeFile(tw, name, data)
	}
	if err := add(layoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return "", err
	}
	for _, blob := range append([][]byte{img.config, raw}, img.layers...) {
		if err := add(blobPath(digestOf(blob)), blob); err != nil {
			return "", err
		}
	}
	if err := add(indexFile, idx); err != nil {
		return "", err
	}
	if err := add(dockerManifestFile, dockerJSON); err != nil {
		return "", err
	}
	return digest, tw.Close()
}

// epoch is the time of every entry of the archives the release writes.
var epoch = time.Unix(0, 0).UTC()

// writeFile writes a regular file of mode 0644, owned by root, at the epoch.
func writeFile(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// readTar reads every regular file of a tar archive into memory, by name.
func readTar(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", hdr.Name, err)
		}
		files[strings.TrimPrefix(hdr.Name, "./")] = data
	}
}

// fullName is ref as containerd names images, with the registry, and on Docker Hub with the
// library/ of official images: registry.example/a:v1 stays, a:v1 is docker.io/library/a:v1.
func fullName(ref string) string {
	domain, rest, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(domain, ".:") || domain == "localhost") {
		if domain == "index.docker.io" {
			domain = "docker.io"
		}
		if domain != "docker.io" || strings.Contains(rest, "/") {
			return domain + "/" + rest
		}
		return "docker.io/library/" + rest
	}
	if !ok {
		return "docker.io/library/" + ref
	}
	return "docker.io/" + ref
}

// readRelease reads a release archive and checks it: one image in its index, every blob of it
// present under its digest, manifest.json naming the same blobs and one tag. It returns
// tag@<manifest digest>.
func readRelease(r io.Reader) (string, error) {
	files, err := readTar(r)
	if err != nil {
		return "", err
	}
	blob := func(d descriptor) ([]byte, error) {
		data, ok := files[blobPath(d.Digest)]
		if !ok {
			return nil, fmt.Errorf("the blob %s is not in the archive", d.Digest)
		}
		if got := digestOf(data); got != d.Digest || int64(len(data)) != d.Size {
			return nil, fmt.Errorf("the blob %s has digest %s and size %d, want size %d", d.Digest, got, len(data), d.Size)
		}
		return data, nil
	}
	var idx index
	if err := json.Unmarshal(files[indexFile], &idx); err != nil {
		return "", fmt.Errorf("%s: %w", indexFile, err)
	}
	if len(idx.Manifests) != 1 {
		return "", fmt.Errorf("%s lists %d manifests, want 1", indexFile, len(idx.Manifests))
	}
	raw, err := blob(idx.Manifests[0])
	if err != nil {
		return "", err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("the manifest: %w", err)
	}
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		if _, err := blob(d); err != nil {
			return "", err
		}
	}
	tag, err := dockerTag(files[dockerManifestFile], m)
	if err != nil {
		return "", err
	}
	if name := idx.Manifests[0].Annotations[annotationImageName]; name != fullName(tag) {
		return "", fmt.Errorf("the index names the image %q, manifest.json %q", name, tag)
	}
	return tag + "@" + idx.Manifests[0].Digest, nil
}

// dockerTag checks that manifest.json names one image, the blobs of m, with one tag, and returns
// the tag.
func dockerTag(data []byte, m manifest) (string, error) {
	var images []dockerImage
	if err := json.Unmarshal(data, &images); err != nil {
		return "", fmt.Errorf("%s: %w", dockerManifestFile, err)
	}
	if len(images) != 1 || len(images[0].RepoTags) != 1 {
		return "", fmt.Errorf("%s: %+v, want one image with one tag", dockerManifestFile, images)
	}
	want := dockerImage{Config: blobPath(m.Config.Digest), RepoTags: images[0].RepoTags}
	for _, d := range m.Layers {
		want.Layers = append(want.Layers, blobPath(d.Digest))
	}
	if got := mustJSON(images[0]); !bytes.Equal(got, mustJSON(want)) {
		return "", fmt.Errorf("%s names %s, the index's manifest %s", dockerManifestFile, got, mustJSON(want))
	}
	return images[0].RepoTags[0], nil
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
