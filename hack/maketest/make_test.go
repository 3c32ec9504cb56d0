package maketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

// root is the repository, from this package's directory.
const root = "../.."

// installer matches a command that installs or removes Debian packages.
var installer = regexp.MustCompile(`\b(apt-get|apt|dpkg|aptitude)\b`)

// makeEnv is the environment without the make variables of a make that runs this test (make
// test-unit), so that its flags (-k, -j, its jobserver) do not leak into the make under test.
func makeEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// dryRun returns what `make -n args...` in the repository would run. make -n still runs the
// recipe lines that call $(MAKE): the tiers' gates and hack/test-tiers.sh, with -n passed on.
func dryRun(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory"}, args...)...)
	cmd.Dir = root
	cmd.Env = makeEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMakeTestInstallsNothing: whether the host has what make test-deps installs or not (the
// gates forced either way, and the host as it is), make test runs no package manager; the gated
// tiers run when their gate is met and print one line naming make test-deps when it is not.
func TestMakeTestInstallsNothing(t *testing.T) {
	tests := []struct {
		name string
		vars []string
		// want and notWant are substrings of the dry run.
		want, notWant []string
	}{
		{
			name: "host as it is",
		},
		{
			name:    "real node and Chromium ready",
			vars:    []string{"NODE_UNMET=true", "CHROMIUM_UNMET=true"},
			want:    []string{"go test ./test/node", "CHROMIUM_REQUIRED=1 go test ./internal/testutil/chromium"},
			notWant: []string{"] test-node: skipped", "] test-html: skipped"},
		},
		{
			name: "real node and Chromium missing",
			vars: []string{"NODE_UNMET=echo containerd", "CHROMIUM_UNMET=echo chromium"},
			want: []string{
				"[test-node] test-node: skipped, the real node needs root and Debian's packages (missing:containerd): run make test-deps as root to enable it\n",
				"[test-html] test-html: skipped, no headless Chromium (missing:chromium): run make test-deps as root to enable it\n",
			},
			notWant: []string{"go test ./test/node", "CHROMIUM_REQUIRED=1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := dryRun(t, append([]string{"test"}, tc.vars...)...)
			for _, line := range strings.Split(out, "\n") {
				if installer.MatchString(line) {
					t.Errorf("make test would run a package manager:\n%s", line)
				}
			}
			// Every tier ran, through hack/test-tiers.sh, which printed its table.
			for tier, lane := range map[string]int{"test-unit": 1, "test-html": 1, "test-e2e": 1, "test-monitoring": 2, "test-node": 2} {
				if !regexp.MustCompile(`(?m)^` + row(tier, lane, `\d+ MB`, "ok") + `$`).MatchString(out) {
					t.Errorf("no row of %s in the table of hack/test-tiers.sh:\n%s", tier, out)
				}
			}
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("make -n test does not print %q:\n%s", s, out)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(out, s) {
					t.Errorf("make -n test prints %q:\n%s", s, out)
				}
			}
		})
	}
}

// TestMakeTestDepsInstalls: make test-deps is where the packages are installed, for every host
// that lacks them; this also shows the pattern of the test above finds the installer's commands.
func TestMakeTestDepsInstalls(t *testing.T) {
	out := dryRun(t, "test-deps")
	for _, cmd := range []string{
		"apt-get install -y --no-install-recommends$missing",
		"apt-get install -y --no-install-recommends chromium-headless-shell",
	} {
		if !strings.Contains(out, cmd) || !installer.MatchString(cmd) {
			t.Errorf("make -n test-deps does not print %q:\n%s", cmd, out)
		}
	}
}

// nodePrograms are the programs NODE_NEEDS looks for.
var nodePrograms = []string{
	"containerd", "containerd-shim-runc-v2", "ctr", "runc", "ip", "conntrack", "nft",
	"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
}

// TestNodeGate: the real-node tier's gate names the Debian packages of the programs and CNI
// plugins that are missing, the ones make test-deps installs, and runs the tier when none is.
func TestNodeGate(t *testing.T) {
	// tools are what make -n test-node runs besides the node's programs.
	tools := t.TempDir()
	for _, name := range []string{"make", "bash", "sh", "env", "id", "cut", "tr", "awk", "find", "cat"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name                  string
		absent, absentPlugins []string
		// want is the list of missing packages, empty when the tier runs.
		want string
	}{
		{name: "everything there"},
		{name: "no nft", absent: []string{"nft"}, want: "nftables"},
		{name: "no ip6tables-restore, no ctr", absent: []string{"ip6tables-restore", "ctr"}, want: "containerd iptables"},
		{name: "no portmap plugin", absentPlugins: []string{"portmap"}, want: "containernetworking-plugins"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bin, cni := t.TempDir(), t.TempDir()
			for _, name := range nodePrograms {
				if !slices.Contains(tc.absent, name) {
					writeExecutable(t, filepath.Join(bin, name))
				}
			}
			for _, name := range []string{"bridge", "host-local", "portmap", "loopback"} {
				if !slices.Contains(tc.absentPlugins, name) {
					writeExecutable(t, filepath.Join(cni, name))
				}
			}
			cmd := exec.Command(filepath.Join(tools, "make"), "-n", "--no-print-directory", "test-node", "NODE_CNI_DIR="+cni)
			cmd.Dir = root
			cmd.Env = makeEnv("PATH=" + bin + string(os.PathListSeparator) + tools)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n test-node: %v\n%s", err, out)
			}
			notRoot := ""
			if os.Geteuid() != 0 {
				notRoot = " root"
			}
			skip := regexp.MustCompile(`(?m)^test-node: skipped, the real node needs root and Debian's packages \(missing:(.*)\): run make test-deps as root to enable it$`)
			m := skip.FindSubmatch(out)
			switch {
			case tc.want == "" && notRoot == "":
				if m != nil || !strings.Contains(string(out), "go test ./test/node") {
					t.Errorf("make -n test-node does not run the tier:\n%s", out)
				}
			case m == nil:
				t.Errorf("make -n test-node does not skip the tier:\n%s", out)
			case string(m[1]) != strings.TrimRight(notRoot+" "+tc.want, " "):
				t.Errorf("missing:%s, want%s %s", m[1], notRoot, tc.want)
			}
		})
	}
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestDeployWaitsForTheOperator: make deploy waits for the Deployment and in the namespace that
// the real-node tier (internal/operatorenv) finds config/default's operator under, with a sample
// profile that exists.
func TestDeployWaitsForTheOperator(t *testing.T) {
	out := dryRun(t, "deploy")
	m := regexp.MustCompile(`(?m)^hack/deploy-wait\.sh (\S+) (\S+) (\S+) (\d+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("make -n deploy does not run hack/deploy-wait.sh:\n%s", out)
	}
	if m[1] != operatorenv.Namespace || m[2] != operatorenv.OperatorDeployment {
		t.Errorf("make deploy waits for %s/%s, want %s/%s", m[1], m[2], operatorenv.Namespace, operatorenv.OperatorDeployment)
	}
	if _, err := os.Stat(filepath.Join(root, m[3])); err != nil {
		t.Errorf("make deploy's sample profile: %v", err)
	}
	if !strings.Contains(out, "kubectl apply --server-side") || strings.Index(out, "kubectl apply --server-side") > strings.Index(out, "hack/deploy-wait.sh") {
		t.Errorf("make deploy does not apply the operator before it waits:\n%s", out)
	}
}
