package bundle

import (
	"bufio"
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// dockerInstruction is one instruction of a Dockerfile, continuation lines joined.
type dockerInstruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

func parseDockerfile(t *testing.T, rel string) []dockerInstruction {
	t.Helper()
	var out []dockerInstruction
	var pending string
	scanner := bufio.NewScanner(bytes.NewReader(readFile(t, rel)))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if pending == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			pending += cont + " "
			continue
		}
		line = pending + line
		pending = ""
		cmd, args, _ := strings.Cut(line, " ")
		out = append(out, dockerInstruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
	}
	return out
}

// TestDockerfile checks what can be checked without a container engine: a builder on the Go
// version of go.mod that runs `make build` (the target `make test` builds, so the two cannot
// drift), and a distroless nonroot final stage with both binaries.
func TestDockerfile(t *testing.T) {
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(readFile(t, "go.mod"))
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	instructions := parseDockerfile(t, "Dockerfile")
	var froms, runs, copies, users []string
	for _, in := range instructions {
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
		case "RUN":
			runs = append(runs, in.args)
		case "COPY":
			copies = append(copies, in.args)
		case "USER":
			users = append(users, in.args)
		}
	}
	if len(froms) != 2 {
		t.Fatalf("Dockerfile stages: got %q, want a builder and a final stage", froms)
	}
	if want := "golang:" + string(goVersion[1]); !strings.Contains(froms[0], want+" ") && !strings.HasSuffix(froms[0], want) {
		t.Errorf("Builder stage %q does not use %s, the Go version of go.mod", froms[0], want)
	}
	if froms[1] != "gcr.io/distroless/static:nonroot" {
		t.Errorf("Final stage %q, want gcr.io/distroless/static:nonroot", froms[1])
	}
	buildRuns := 0
	for _, run := range runs {
		if regexp.MustCompile(`(^|\s)make build(\s|$)`).MatchString(run) {
			buildRuns++
		}
		if strings.Contains(run, "go build") {
			t.Errorf("Dockerfile runs %q: build through `make build` only, so that local and image builds agree", run)
		}
	}
	if buildRuns != 1 {
		t.Errorf("Dockerfile RUN lines %q: want exactly one running `make build`", runs)
	}
	final := copies[len(copies)-1]
	for _, bin := range []string{"bin/manager", "bin/kube-scheduler"} {
		if !strings.Contains(final, bin) {
			t.Errorf("The final stage's COPY %q lacks %s", final, bin)
		}
	}
	if len(users) == 0 || users[len(users)-1] != "65532:65532" {
		t.Errorf("Dockerfile USER %q, want 65532:65532 last", users)
	}
	if last := instructions[len(instructions)-1]; last.cmd != "ENTRYPOINT" || !strings.Contains(last.args, "/manager") {
		t.Errorf("Dockerfile ends with %s %s, want ENTRYPOINT [\"/manager\"]", last.cmd, last.args)
	}
}

// TestMakeBuildIsStatic checks that `make build`, which the Dockerfile runs, builds both
// binaries statically (CGO_ENABLED=0, for distroless/static) with the Kubernetes version
// ldflags. `make test` builds it for real (test-bundle depends on build).
func TestMakeBuildIsStatic(t *testing.T) {
	cmd := exec.Command("make", "--always-make", "--dry-run", "bin/manager", "bin/kube-scheduler")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make --dry-run build: %v\n%s", err, out)
	}
	var builds []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "go build") {
			builds = append(builds, line)
		}
	}
	if len(builds) != 2 {
		t.Fatalf("make build runs %d go builds, want 2:\n%s", len(builds), out)
	}
	for _, line := range builds {
		for _, want := range []string{"CGO_ENABLED=0", "-X k8s.io/component-base/version.gitVersion=v", "-X k8s.io/client-go/pkg/version.gitVersion=v"} {
			if !strings.Contains(line, want) {
				t.Errorf("%q lacks %q", line, want)
			}
		}
	}
}
