package maketest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tiersMakefile runs hack/test-tiers.sh as make test does, on three tiers of which tier-b fails.
const tiersMakefile = `test:
	@MAKE="$(MAKE)" $(SCRIPT) tier-a tier-b tier-c
tier-a:
	@echo ran tier-a; head -c 3145728 /dev/zero > "$$(go env GOCACHE)/tier-a"
tier-b:
	@echo ran tier-b; exit 3
tier-c:
	@echo ran tier-c
`

// row is the pattern of a row of hack/test-tiers.sh's table: the tier, its lane, when it started
// and its time, what was compiled meanwhile and its result (patterns).
func row(tier string, lane int, compiled, result string) string {
	return fmt.Sprintf(`%s +%d +[0-9.ms]+ +[0-9.ms]+ +%s +%s`, tier, lane, compiled, result)
}

// TestTestTiers: hack/test-tiers.sh prints a row per tier it ran, with what the Go build cache
// grew by, and a total, and leaves make's exit status and -k as they were: a failing tier fails
// make test, and stops it unless -k.
func TestTestTiers(t *testing.T) {
	script, err := filepath.Abs(filepath.Join(root, "hack/test-tiers.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(tiersMakefile), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
		// ran are the tiers that ran, rows the table's rows in order.
		ran, rows []string
	}{
		{
			name: "stops at the failing tier",
			ran:  []string{"tier-a", "tier-b"},
			rows: []string{row("tier-a", 1, "3 MB", "ok"), row("tier-b", 1, "0 MB", `FAILED \(exit 2\)`)},
		},
		{
			name:  "keeps going with -k",
			flags: []string{"-k"},
			ran:   []string{"tier-a", "tier-b", "tier-c"},
			rows:  []string{row("tier-a", 1, "3 MB", "ok"), row("tier-b", 1, "0 MB", `FAILED \(exit 2\)`), row("tier-c", 1, "0 MB", "ok")},
		},
		{
			name:  "-j is not -k",
			flags: []string{"-j2"},
			ran:   []string{"tier-a", "tier-b"},
			rows:  []string{row("tier-a", 1, "3 MB", "ok"), row("tier-b", 1, "0 MB", `FAILED \(exit 2\)`)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("make", append([]string{"-s", "--no-print-directory", "SCRIPT=" + script}, tc.flags...)...)
			cmd.Dir = dir
			// A build cache of its own, which tier-a grows by 3 MB.
			cmd.Env = makeEnv("GOCACHE=" + t.TempDir())
			out, err := cmd.CombinedOutput()
			if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != 2 {
				t.Errorf("make test: %v, want exit status 2 (a tier failed)\n%s", err, out)
			}
			var ran []string
			for _, line := range strings.Split(string(out), "\n") {
				if tier, ok := strings.CutPrefix(line, "ran "); ok {
					ran = append(ran, tier)
				}
			}
			if strings.Join(ran, " ") != strings.Join(tc.ran, " ") {
				t.Errorf("tiers run: %v, want %v\n%s", ran, tc.ran, out)
			}
			table := `(?m)^tier +lane +started +time +compiled +result\n` + strings.Join(tc.rows, `\n`) + `\ntotal +\d+\.\ds +3 MB$`
			if !regexp.MustCompile(table).Match(out) {
				t.Errorf("no table matching %s in:\n%s", table, out)
			}
		})
	}
}

// TestTestTiersAllPass: when every tier passes, so does make test.
func TestTestTiersAllPass(t *testing.T) {
	cmd := exec.Command(filepath.Join(root, "hack/test-tiers.sh"), "one", "two")
	cmd.Env = makeEnv("MAKE=true", "GOCACHE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/test-tiers.sh: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^` + row("one", 1, `\d+ MB`, "ok") + `\n` + row("two", 1, `\d+ MB`, "ok") + `\ntotal`).Match(out) {
		t.Errorf("unexpected table:\n%s", out)
	}
}

// TestTestTiersComparesPackages: hack/test-tiers.sh lists the host's packages before and after
// the tiers (dpkg-query, here a fake that reads a file): a tier that installs one fails make test
// with the difference, even when every tier passed; an unchanged list passes and is counted.
func TestTestTiersComparesPackages(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "packages")
	if err := os.WriteFile(list, []byte("ii  make 4.4.1-2\nii  gcc 4:14.2.0-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\ncat " + list + "\n"
	if err := os.WriteFile(filepath.Join(dir, "dpkg-query"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	// The tiers: one installs a package when asked to, the other does nothing.
	tier := "#!/bin/sh\ncase \"$*\" in *installs) echo 'ii  containerd 1.6.20' >> " + list + ";; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "tier"), []byte(tier), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(tiers ...string) (string, error) {
		cmd := exec.Command(filepath.Join(root, "hack/test-tiers.sh"), tiers...)
		cmd.Env = makeEnv("MAKE="+filepath.Join(dir, "tier"), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("quiet")
	if err != nil || !strings.Contains(out, "the host's packages are as before: 2 installed") {
		t.Errorf("tiers that install nothing: %v\n%s", err, out)
	}
	out, err = run("quiet", "installs")
	if err == nil {
		t.Errorf("a tier installed a package and hack/test-tiers.sh exited 0:\n%s", out)
	}
	if !strings.Contains(out, "make test changed the host's packages") || !strings.Contains(out, "> ii  containerd 1.6.20") {
		t.Errorf("hack/test-tiers.sh does not show the package the tier installed:\n%s", out)
	}
}

// lanesMakefile runs two lanes as make test does. slow waits until fast has run, so the test
// passes only if the lanes run at the same time, and then AFTER seconds; late fails.
const lanesMakefile = `test:
	@MAKE="$(MAKE)" $(SCRIPT) slow after-slow -- fast $(LATE)
slow:
	@for i in $$(seq 100); do [ -e fast.done ] && break; sleep 0.1; done; [ -e fast.done ] && echo waited for fast; sleep $(AFTER)
after-slow:
	@echo ran after-slow
fast:
	@touch fast.done; echo ran fast
late:
	@echo ran late; exit 4
`

// TestTestTiersLanes: the lanes separated by "--" run at the same time, each tier's lines with
// its name in front, and the table gives each tier's lane; a tier that fails in one lane keeps the
// other lane from starting another tier, and make test fails with its status.
func TestTestTiersLanes(t *testing.T) {
	script, err := filepath.Abs(filepath.Join(root, "hack/test-tiers.sh"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(late string) (string, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(lanesMakefile), 0o644); err != nil {
			t.Fatal(err)
		}
		// With late, slow ends 2 s after it, so late has failed before after-slow could start.
		after := "0"
		if late != "" {
			after = "2"
		}
		cmd := exec.Command("make", "-s", "--no-print-directory", "SCRIPT="+script, "LATE="+late, "AFTER="+after)
		cmd.Dir = dir
		cmd.Env = makeEnv("GOCACHE=" + t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("")
	if err != nil {
		t.Fatalf("make test: %v\n%s", err, out)
	}
	for _, line := range []string{"[fast] ran fast", "[slow] waited for fast", "[after-slow] ran after-slow"} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("no line %q (the lanes did not run at the same time?):\n%s", line, out)
		}
	}
	for _, r := range []string{row("slow", 1, `\d+ MB`, "ok"), row("fast", 2, `\d+ MB`, "ok"), row("after-slow", 1, `\d+ MB`, "ok")} {
		if !regexp.MustCompile(`(?m)^` + r + `$`).MatchString(out) {
			t.Errorf("no row matching %s in:\n%s", r, out)
		}
	}

	// late fails in lane 2 while slow runs in lane 1: after-slow never starts.
	out, err = run("late")
	if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != 2 {
		t.Errorf("make test: %v, want exit status 2 (a tier failed)\n%s", err, out)
	}
	if !strings.Contains(out, "[late] ran late\n") || strings.Contains(out, "ran after-slow") {
		t.Errorf("want late run and after-slow not started after late failed:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^` + row("late", 2, `\d+ MB`, `FAILED \(exit 2\)`) + `$`).MatchString(out) {
		t.Errorf("no failed row of late:\n%s", out)
	}
}
