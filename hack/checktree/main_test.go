package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gitRepo makes a git repository in a temporary directory that tracks the given files.
func gitRepo(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// executable is the start of this test's own binary: real build output, as `go build` leaves it.
func executable(t *testing.T) []byte {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data[:64<<10]
}

func TestRun(t *testing.T) {
	exe := executable(t)
	text := []byte("package main\n")
	big := []byte(strings.Repeat("a line of text\n", 2000)) // 30000 bytes
	cases := []struct {
		name  string
		files map[string][]byte
		limit int64
		want  []string
	}{{
		name:  "text only",
		files: map[string][]byte{"main.go": text, "README.md": []byte("# x\n")},
		limit: defaultLimit,
	}, {
		name:  "a go build output at the root",
		files: map[string][]byte{"main.go": text, "scheduler-profile-operator": exe},
		limit: defaultLimit,
		want:  []string{"scheduler-profile-operator: an ELF executable or object"},
	}, {
		name:  "binary content that is no executable",
		files: map[string][]byte{"data.bin": {'x', 0, 'y'}},
		limit: defaultLimit,
		want:  []string{"data.bin: binary content"},
	}, {
		name:  "a text file over the limit",
		files: map[string][]byte{"docs/big.md": big},
		limit: 20000,
		want:  []string{"docs/big.md: 30000 bytes, over the limit of 20000"},
	}, {
		name:  "make release's output, text and small",
		files: map[string][]byte{"main.go": text, "dist/install.yaml": []byte("kind: Namespace\n"), "dist/SHA256SUMS": []byte("0  install.yaml\n")},
		limit: defaultLimit,
		want:  []string{"dist/SHA256SUMS: in dist/, the output of make release", "dist/install.yaml: in dist/, the output of make release"},
	}, {
		name: "allowlisted files",
		files: map[string][]byte{
			"docs/big.md":              big,
			"docs/shot.png":            {0x89, 'P', 'N', 'G', 0},
			"hack/checktree/allow.txt": []byte("# what may be big\ndocs/big.md\ndocs/shot.png  # a screenshot\n"),
		},
		limit: 20000,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t, tc.files)
			got, err := run(dir, "hack/checktree/allow.txt", tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommandFailsOnExecutable runs the command the way make verify does, on a fresh clone
// where a build output was added: it must exit non-zero and name the file.
func TestCommandFailsOnExecutable(t *testing.T) {
	dir := gitRepo(t, map[string][]byte{"main.go": []byte("package main\n"), "manager": executable(t)})
	out, err := exec.Command("go", "run", ".", "-C", dir).CombinedOutput()
	if err == nil {
		t.Fatalf("checktree passed a tree that tracks an executable:\n%s", out)
	}
	if !strings.Contains(string(out), "manager: an ELF executable or object") {
		t.Errorf("the failure does not name the executable:\n%s", out)
	}
}

// TestThisTree checks the repository itself, as make verify does.
func TestThisTree(t *testing.T) {
	got, err := run("../..", "hack/checktree/allow.txt", defaultLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("this repository tracks build output:\n%s", strings.Join(got, "\n"))
	}
}
