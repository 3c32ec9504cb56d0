package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// imageTarball is what an image tarball (`docker save` layout, written by `make image`) holds.
type imageTarball struct {
	repoTags []string
	config   imageConfig
	// files maps the path of every regular file in the layers to its mode and content.
	files map[string]imageFile
}

type imageFile struct {
	mode int64
	data []byte
}

// imageConfig is the part of the OCI image config that a Dockerfile's final stage decides.
type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// readImageTarball reads an image tarball with the standard library only, so that the check does
// not share code with the tool that wrote it.
func readImageTarball(t *testing.T, file string) imageTarball {
	t.Helper()
	entries := map[string][]byte{}
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("Opening the image: %v (run `make image`)", err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Reading %s: %v", file, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("Reading %s from %s: %v", hdr.Name, file, err)
		}
		entries[hdr.Name] = data
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json of %s: %v, %d images, want one", file, err, len(manifest))
	}
	img := imageTarball{repoTags: manifest[0].RepoTags, files: map[string]imageFile{}}
	if err := json.Unmarshal(entries[manifest[0].Config], &img.config); err != nil {
		t.Fatalf("Config %s of %s: %v", manifest[0].Config, file, err)
	}
	for _, layer := range manifest[0].Layers {
		zr, err := gzip.NewReader(bytes.NewReader(entries[layer]))
		if err != nil {
			t.Fatalf("Layer %s: %v", layer, err)
		}
		lr := tar.NewReader(zr)
		for {
			hdr, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Layer %s: %v", layer, err)
			}
			if hdr.Typeflag != tar.TypeReg {
				continue
			}
			data, err := io.ReadAll(lr)
			if err != nil {
				t.Fatalf("Layer %s, %s: %v", layer, hdr.Name, err)
			}
			img.files["/"+strings.TrimPrefix(hdr.Name, "/")] = imageFile{mode: hdr.Mode, data: data}
		}
	}
	return img
}

// dockerfileImage is what the Dockerfile's final stage says of the image.
type dockerfileImage struct {
	copied     []string // paths in the image of the files copied from the builder
	user       string
	entrypoint []string
	labels     map[string]string
}

func finalStage(t *testing.T) dockerfileImage {
	t.Helper()
	var d dockerfileImage
	d.labels = map[string]string{}
	for _, in := range parseDockerfile(t, "Dockerfile") {
		switch in.cmd {
		case "FROM": // a new stage starts: only the last one is the image
			d = dockerfileImage{labels: map[string]string{}}
		case "COPY":
			words := strings.Fields(in.args)
			dest := words[len(words)-1]
			for _, src := range words[:len(words)-1] {
				if strings.HasPrefix(src, "--") {
					continue
				}
				d.copied = append(d.copied, strings.TrimSuffix(dest, "/")+"/"+src[strings.LastIndex(src, "/")+1:])
			}
		case "USER":
			d.user = in.args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &d.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s is not in exec form: %v", in.args, err)
			}
		case "LABEL":
			for _, kv := range splitLabels(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				d.labels[k] = strings.Trim(v, `"`)
			}
		}
	}
	sort.Strings(d.copied)
	return d
}

// splitLabels splits KEY="VALUE" pairs on spaces outside quotes.
func splitLabels(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// TestImageMatchesDockerfile checks that `make image` (no container engine) and `make docker-build`
// describe the same image: the files the Dockerfile copies, byte for byte the binaries that
// `make build` wrote, executable; its user, entrypoint and labels; a linux image of the build's
// architecture; and the users of the distroless nonroot base.
func TestImageMatchesDockerfile(t *testing.T) {
	img := readImageTarball(t, path("bin/image.tar"))
	want := finalStage(t)

	var got []string
	for p, f := range img.files {
		if f.mode&0o111 != 0 {
			got = append(got, p)
		}
	}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want.copied) {
		t.Errorf("Executables in the image: %q; the Dockerfile copies %q", got, want.copied)
	}
	for _, p := range want.copied {
		local := readFile(t, "bin/"+strings.TrimPrefix(p, "/"))
		if f := img.files[p]; !bytes.Equal(f.data, local) {
			t.Errorf("%s in the image (%d bytes) is not bin%s (%d bytes): run `make image` after `make build`", p, len(f.data), p, len(local))
		}
	}
	cfg := img.config.Config
	if cfg.User != want.user {
		t.Errorf("Image user %q, Dockerfile USER %q", cfg.User, want.user)
	}
	if !reflect.DeepEqual(cfg.Entrypoint, want.entrypoint) || len(cfg.Cmd) != 0 {
		t.Errorf("Image entrypoint %q cmd %q, Dockerfile ENTRYPOINT %q and no CMD", cfg.Entrypoint, cfg.Cmd, want.entrypoint)
	}
	if !reflect.DeepEqual(cfg.Labels, want.labels) {
		t.Errorf("Image labels %v, Dockerfile LABEL %v", cfg.Labels, want.labels)
	}
	if img.config.OS != "linux" || img.config.Architecture == "" {
		t.Errorf("Image platform %s/%s, want linux/<arch>", img.config.OS, img.config.Architecture)
	}
	if passwd := string(img.files["/etc/passwd"].data); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd of the image lacks distroless' nonroot user 65532:\n%s", passwd)
	}
	if len(img.repoTags) != 1 {
		t.Errorf("Image tags %q, want one (IMG)", img.repoTags)
	}
}
