package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// sumsFile lists the checksums of the other files of the release.
const sumsFile = "SHA256SUMS"

// relatedImagePrefix marks the env vars that name images the operator runs (OLM's convention).
const relatedImagePrefix = "RELATED_IMAGE_"

// seal checks that install, every manifest of the bundle directory and the rendered chart (when
// chart is not empty) name only the image of the archive image, by digest; packs the bundle into
// bundle.tar.gz; and writes SHA256SUMS. image, install and bundle are relative to dir; chart is a
// file outside it, which the release does not contain.
func seal(dir, image, install, bundle, chart string) error {
	f, err := os.Open(filepath.Join(dir, image))
	if err != nil {
		return err
	}
	ref, err := readRelease(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", image, err)
	}
	if err := checkPinnedFiles(ref, filepath.Join(dir, install)); err != nil {
		return err
	}
	manifests, err := filepath.Glob(filepath.Join(dir, bundle, "bundle", "manifests", "*.yaml"))
	if err != nil {
		return err
	}
	if len(manifests) == 0 {
		return fmt.Errorf("%s has no bundle/manifests/*.yaml", filepath.Join(dir, bundle))
	}
	if err := checkPinnedFiles(ref, manifests...); err != nil {
		return err
	}
	if chart != "" {
		if err := checkPinnedFiles(ref, chart); err != nil {
			return fmt.Errorf("the Helm chart: %w", err)
		}
	}
	if err := packDir(filepath.Join(dir, bundle), filepath.Join(dir, bundle+".tar.gz")); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(dir, bundle)); err != nil {
		return err
	}
	return writeSums(dir)
}

// checkPinnedFiles fails unless the YAML files together name at least one image and every image
// they name is ref.
func checkPinnedFiles(ref string, files ...string) error {
	var found int
	var problems []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		n, p, err := checkPinned(data, ref)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		found += n
		for _, problem := range p {
			problems = append(problems, filepath.Base(file)+": "+problem)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("images not pinned to %s:\n\t%s", ref, strings.Join(problems, "\n\t"))
	}
	if found == 0 {
		return fmt.Errorf("%s name no image", strings.Join(files, ", "))
	}
	return nil
}

// imageRef is an image reference and where an object names it.
type imageRef struct {
	path, ref string
}

// checkPinned returns how many image references the YAML documents of data hold, and one problem
// per reference that is not ref.
func checkPinned(data []byte, ref string) (int, []string, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found int
	var problems []string
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return found, problems, nil
		}
		if err != nil {
			return 0, nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return 0, nil, err
		}
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		name := fmt.Sprintf("%v %v", obj["kind"], meta["name"])
		for _, r := range imageRefs(obj, "", nil) {
			found++
			if r.ref != ref {
				problems = append(problems, fmt.Sprintf("%s: %s is %q", name, r.path, r.ref))
			}
		}
	}
}

// imageRefs returns the image references of node: the image and the RELATED_IMAGE_* env values
// of every container, initContainer and ephemeralContainer (of a Pod, a workload's template, a
// ClusterServiceVersion's Deployments), a CSV's relatedImages and its containerImage annotation.
func imageRefs(node any, path string, out []imageRef) []imageRef {
	switch n := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := strings.TrimPrefix(path+"."+k, ".")
			switch v := n[k].(type) {
			case []any:
				switch k {
				case "containers", "initContainers", "ephemeralContainers":
					for i, c := range v {
						out = containerRefs(c, fmt.Sprintf("%s[%d]", p, i), out)
					}
					continue
				case "relatedImages":
					for i, r := range v {
						r, _ := r.(map[string]any)
						image, _ := r["image"].(string)
						out = append(out, imageRef{fmt.Sprintf("%s[%d].image", p, i), image})
					}
					continue
				}
			case string:
				if k == "containerImage" {
					out = append(out, imageRef{p, v})
				}
				continue
			}
			out = imageRefs(n[k], p, out)
		}
	case []any:
		for i, v := range n {
			out = imageRefs(v, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
	return out
}

// containerRefs returns the image of a container and its RELATED_IMAGE_* env values.
func containerRefs(node any, path string, out []imageRef) []imageRef {
	c, _ := node.(map[string]any)
	image, _ := c["image"].(string)
	out = append(out, imageRef{path + ".image", image})
	env, _ := c["env"].([]any)
	for i, e := range env {
		e, _ := e.(map[string]any)
		if name, _ := e["name"].(string); strings.HasPrefix(name, relatedImagePrefix) {
			value, _ := e["value"].(string)
			out = append(out, imageRef{fmt.Sprintf("%s.env[%d](%s)", path, i, name), value})
		}
	}
	return out
}

// packDir writes the directory src as a gzipped tarball whose entries are under src's base name.
// Every entry is owned by root at the epoch, directories 0755 and files 0644: the same files give
// the same bytes.
func packDir(src, out string) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	base := filepath.Base(src)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(filepath.Join(base, rel))
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch})
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return writeFile(tw, name, data)
		default:
			return fmt.Errorf("%s is neither a file nor a directory", path)
		}
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// writeSums writes dir/SHA256SUMS: the SHA-256 of every other file of dir, by name, in the format
// `sha256sum -c` reads. dir must hold files only.
func writeSums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var sums bytes.Buffer
	for _, e := range entries {
		if e.Name() == sumsFile {
			continue
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a file: a release is a flat list of files", filepath.Join(dir, e.Name()))
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%x  %s\n", sum, e.Name())
	}
	return os.WriteFile(filepath.Join(dir, sumsFile), sums.Bytes(), 0o644)
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
