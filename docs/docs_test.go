// Package docs holds the documentation pages; its tests keep them true. Every command of a
// `console` block is run and its output compared with the page, every shell block parses (`bash
// -n`), every relative link must resolve (anchors included), every page is reachable from the
// index, every metric the operator registers is in the metrics reference with its labels, the
// profile the pages show is the sample that is applied, and no user page carries a commit hash,
// a date or a path of one machine: pages are manuals, history is in CHANGELOG.md and git.
//
// Where a page lists what the code has, the test takes the list from the code and compares: the
// reasons of conditions (api/v1alpha1/conditions.go, through hack/conditions-doc/conditions), the
// webhook's warnings and the advice codes, a profile's spec fields and printer columns, the
// manager's commands, and the upgrade notes against CHANGELOG.md's versions.
package docs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/hack/conditions-doc/conditions"
	"github.com/schedops/scheduler-profile-operator/pkg/operator/manager"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

// root is the repository's root, relative to this package.
const root = ".."

// rootPages are the user pages at the repository's root that the tests read besides docs/.
// CHANGELOG.md is not one of them: history, with its dates, belongs there.
var rootPages = []string{"README.md", "CONTRIBUTING.md", "SECURITY.md"}

// pages are the markdown files the tests read: the root pages and every page under docs/.
func pages(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, name := range rootPages {
		out = append(out, filepath.Join(root, name))
	}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// block is a fenced code block of a page.
type block struct {
	info  string // the fence's info string: "console", "sh", "yaml", ...
	line  int    // the line of the opening fence
	lines []string
}

// parsed is a page split into its prose lines (code blocks left out) and its code blocks.
type parsed struct {
	prose  []string
	blocks []block
}

func parse(t *testing.T, path string) parsed {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p parsed
	var cur *block
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{info: strings.TrimPrefix(trimmed, "```"), line: i + 1}
		case cur != nil && trimmed == "```":
			p.blocks = append(p.blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		default:
			p.prose = append(p.prose, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block that is never closed", path, cur.line)
	}
	return p
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE    = regexp.MustCompile("`[^`]*`")
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	// slugDrop is what GitHub drops from a heading to make its anchor.
	slugDrop = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// anchors are the anchors of a page's headings, as GitHub makes them.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, line := range parse(t, path).prose {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			slug := slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
			out[strings.ReplaceAll(slug, " ", "-")] = true
		}
	}
	return out
}

// TestRelativeLinks checks that every relative link of every page, and of CHANGELOG.md, names a
// file that exists and, when it has one, an anchor of that page.
func TestRelativeLinks(t *testing.T) {
	for _, page := range append(pages(t), filepath.Join(root, "CHANGELOG.md")) {
		for _, line := range parse(t, page).prose {
			for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				info, err := os.Stat(path)
				if err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
				if anchor != "" && !info.IsDir() && !anchors(t, path)[anchor] {
					t.Errorf("%s: link %q: %s has no heading with the anchor %q", page, target, path, anchor)
				}
			}
		}
	}
}

// TestEveryPageIsLinkedFromTheIndex keeps the index complete: a page nobody links to is lost.
func TestEveryPageIsLinkedFromTheIndex(t *testing.T) {
	linked := map[string]bool{}
	for _, line := range parse(t, "README.md").prose {
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[filepath.Clean(file)] = true
		}
	}
	for _, page := range pages(t) {
		if page == "README.md" || strings.HasPrefix(page, "..") {
			continue
		}
		if !linked[page] {
			t.Errorf("docs/README.md does not link to %s", page)
		}
	}
}

// offlineCommand is the prefix of the commands that run without a cluster: the manager's offline
// subcommands and flags. A page shows them in console blocks, so they are run.
const offlineCommand = "bin/manager"

// TestOfflineCommandsAreInConsoleBlocks stops a page from showing an offline command where it
// would not be run: in a code block of another kind.
func TestOfflineCommandsAreInConsoleBlocks(t *testing.T) {
	for _, page := range pages(t) {
		for _, b := range parse(t, page).blocks {
			if b.info == "console" {
				continue
			}
			for i, line := range b.lines {
				cmd := strings.TrimPrefix(strings.TrimSpace(line), "$ ")
				if strings.HasPrefix(cmd, offlineCommand+" ") {
					t.Errorf("%s:%d: %q runs offline: show it in a console block, which go test ./docs runs", page, b.line+1+i, cmd)
				}
			}
		}
	}
}

// TestConsoleBlocks runs every command of every console block from the repository's root, with
// bin/manager built from this tree, and compares what it prints with the lines that follow it.
func TestConsoleBlocks(t *testing.T) {
	manager := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", manager, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	ran := 0
	for _, page := range pages(t) {
		for _, b := range parse(t, page).blocks {
			if b.info != "console" {
				continue
			}
			for _, c := range commands(b) {
				where := fmt.Sprintf("%s:%d", page, c.line)
				if !strings.HasPrefix(c.cmd, offlineCommand+" ") {
					t.Errorf("%s: %q: console blocks hold only offline commands (%s ...); show others in an sh block", where, c.cmd, offlineCommand)
					continue
				}
				cmd := exec.Command("bash", "-c", manager+strings.TrimPrefix(c.cmd, offlineCommand))
				cmd.Dir = root
				out, _ := cmd.CombinedOutput() // the exit code is part of the output where a page shows it
				if !matches(c.want, lines(string(out))) {
					t.Errorf("%s: the output of %q does not match the page.\npage:\n%s\ngot:\n%s", where, c.cmd, strings.Join(c.want, "\n"), out)
				}
				ran++
			}
		}
	}
	if ran == 0 {
		t.Fatal("no console block found: the pages show no offline command")
	}
}

// command is one `$ ` line of a console block and the output the page shows for it.
type command struct {
	cmd  string
	line int
	want []string
}

func commands(b block) []command {
	var out []command
	for i, line := range b.lines {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			out = append(out, command{cmd: cmd, line: b.line + 1 + i})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].want = append(out[len(out)-1].want, line)
		}
	}
	return out
}

func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// matches compares output with a page's lines by shape: runs of blanks count as one, a line "..."
// stands for any number of lines, and a line ending in "..." for any line that starts like it.
func matches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	w := strings.Join(strings.Fields(want[0]), " ")
	if w == "..." {
		for skip := 0; skip <= len(got); skip++ {
			if matches(want[1:], got[skip:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	g := strings.Join(strings.Fields(got[0]), " ")
	if prefix, ok := strings.CutSuffix(w, "..."); ok {
		if !strings.HasPrefix(g, strings.TrimSpace(prefix)) {
			return false
		}
	} else if g != w {
		return false
	}
	return matches(want[1:], got[1:])
}

func TestMatches(t *testing.T) {
	cases := []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"a  b"}, []string{"a b"}, true},
		{[]string{"a", "...", "d"}, []string{"a", "b", "c", "d"}, true},
		{[]string{"a", "...", "d"}, []string{"a", "d"}, true},
		{[]string{"a", "..."}, []string{"a"}, true},
		{[]string{"a", "d"}, []string{"a", "b", "d"}, false},
		{[]string{"a"}, []string{"a", "b"}, false},
		{[]string{"PLUGIN x ..."}, []string{"PLUGIN x y z"}, true},
		{[]string{"PLUGIN y ..."}, []string{"PLUGIN x y z"}, false},
		{[]string{"1"}, []string{"0"}, false},
	}
	for _, tc := range cases {
		if got := matches(tc.want, tc.got); got != tc.ok {
			t.Errorf("matches(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
}

// TestMetricsReference checks that every metric the operator registers is in the reference.
func TestMetricsReference(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "controllers", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(filepath.Join("reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`Name:\s+"(schedops_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(names) == 0 {
		t.Fatal("no schedops_ metric found in controllers/metrics/metrics.go")
	}
	for _, m := range names {
		if !strings.Contains(string(ref), "`"+m[1]+"`") {
			t.Errorf("docs/reference/metrics.md does not document %s", m[1])
		}
	}
}

var (
	// hexRE finds what may be a commit hash: a word of 7 to 40 hexadecimal digits. hashLike keeps
	// those with a digit and a letter, so that numbers and words such as "deadbeef" or "1000000"
	// do not count.
	hexRE = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	// dateRE finds a date as git, logs and benchmark tables print it.
	dateRE = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	// configHashPrefixes are what comes right before a configuration's content hash in the
	// operator's and the demo's output (a ConfigMap "binpack-config-63a19d9f7a", "config hash
	// 63a19d9f7a"): the hash of the rendered configuration, which the pages show as it is
	// printed, not a commit.
	configHashPrefixes = []string{"config-", "config hash "}
)

func hashLike(word string) bool {
	return strings.ContainsAny(word, "0123456789") && strings.ContainsAny(word, "abcdef")
}

// diaryFindings are the commit hashes and dates of a page's lines, code blocks included.
func diaryFindings(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		for _, loc := range hexRE.FindAllStringIndex(line, -1) {
			word := line[loc[0]:loc[1]]
			if !hashLike(word) || afterConfigPrefix(line[:loc[0]]) {
				continue
			}
			out = append(out, fmt.Sprintf("line %d: %q looks like a commit hash", i+1, word))
		}
		for _, date := range dateRE.FindAllString(line, -1) {
			out = append(out, fmt.Sprintf("line %d: %q is a date", i+1, date))
		}
	}
	return out
}

func afterConfigPrefix(before string) bool {
	for _, p := range configHashPrefixes {
		if strings.HasSuffix(before, p) {
			return true
		}
	}
	return false
}

// TestUserPagesAreNotDiaries keeps the history of runs and changes out of the user pages: a page
// says what a feature does, how to use it and what it costs, in the present tense. A commit hash
// or a date is the sign of a diary ("before these changes (commit ...)", "measured on ..."); what
// a user needs of that history goes to CHANGELOG.md, the rest stays in git.
func TestUserPagesAreNotDiaries(t *testing.T) {
	for _, page := range pages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range diaryFindings(string(data)) {
			t.Errorf("%s: %s: user pages are manuals, not diaries; history goes to CHANGELOG.md", page, f)
		}
	}
}

func TestDiaryFindings(t *testing.T) {
	cases := []struct {
		name string
		text string
		want int
	}{
		{"a short commit hash", "before these changes (commit 362c" + "5b9, same command)", 1},
		{"a full commit hash", "fixed in 95e91501c4d1a2b3" + "c4d5e6f708192a3b4c5d6e7f", 1},
		{"a date", "make bench on 20" + "26-12-01 at 22:08 UTC", 1},
		{"a date in a table header", "bench validate: 20" + "26-12-01 22:08 UTC, 2 CPUs", 1},
		{"a config hash in a ConfigMap name", "config binpack-config-63a19d9f7a", 0},
		{"a config hash as render prints it", "# SchedulerProfile binpack, config hash 63a19d9f7a", 0},
		{"a Scheduler's ConfigMap", "config shared.config-40107573e6)", 0},
		{"a number", "about 12000000 writes", 0},
		{"a word of hex letters", "a deadbeef value", 0},
		{"a version", "kube-scheduler v1.37.2, go1.26.8", 0},
		{"a hash in a word", "image@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 0},
	}
	for _, tc := range cases {
		if got := diaryFindings(tc.text); len(got) != tc.want {
			t.Errorf("%s: diaryFindings(%q) = %q, want %d findings", tc.name, tc.text, got, tc.want)
		}
	}
}

// sampleProfile is the sample that `kubectl apply -k config/samples` applies and the pages show.
const sampleProfile = "../config/samples/scheduling_v1alpha1_schedulerprofile_binpack.yaml"

// TestShownProfileIsTheSample checks that the profile the README and write-a-profile show, the
// first yaml block of each, is the sample that is applied, field for field (comments and layout
// aside).
func TestShownProfileIsTheSample(t *testing.T) {
	want := decodeYAML(t, sampleProfile, readFile(t, sampleProfile))
	for _, page := range []string{filepath.Join(root, "README.md"), filepath.Join("tasks", "write-a-profile.md")} {
		var shown *block
		for _, b := range parse(t, page).blocks {
			if b.info == "yaml" {
				shown = &b
				break
			}
		}
		if shown == nil {
			t.Errorf("%s: no yaml block", page)
			continue
		}
		got := decodeYAML(t, fmt.Sprintf("%s:%d", page, shown.line), []byte(strings.Join(shown.lines, "\n")))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s:%d: the profile shown is not %s (-sample +shown):\n%s", page, shown.line, sampleProfile, diff)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func decodeYAML(t *testing.T, where string, data []byte) map[string]any {
	t.Helper()
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return out
}

// shellInfos are the info strings of the fenced blocks that hold shell: scripts (sh, bash,
// shell) and transcripts (console). An untagged block is a transcript too when it shows a
// prompt ("$ ").
var shellInfos = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// script is the shell of a block, for `bash -n`, with the page's line of each of its lines; nil
// when the block holds no shell.
//
// A script block (sh, bash, shell) is shell as it stands. A transcript (console, or an untagged
// block with a prompt) is commands and their output: a line that starts with "$ " is a command,
// without the prompt; a line after a command that ends in a backslash continues it; every other
// line is output, left out. In both, a placeholder that the reader replaces, a word in angle
// brackets (`<profile>`, `<schedulerName>`), is replaced by its word: as shell it would be a
// redirection, which at the end of a line does not parse.
func script(b block) (lines []string, at []int) {
	transcript := b.info == "console"
	if b.info == "" {
		for _, line := range b.lines {
			transcript = transcript || strings.HasPrefix(line, "$ ")
		}
	}
	if !shellInfos[b.info] && !transcript {
		return nil, nil
	}
	continued := false
	for i, line := range b.lines {
		if transcript {
			cmd, isCmd := strings.CutPrefix(line, "$ ")
			if !isCmd && !continued {
				continue
			}
			if isCmd {
				line = cmd
			}
			continued = strings.HasSuffix(line, "\\")
		}
		lines = append(lines, placeholderRE.ReplaceAllString(line, "$1"))
		at = append(at, b.line+1+i)
	}
	return lines, at
}

var (
	// placeholderRE finds a placeholder of a command: a word in angle brackets.
	placeholderRE = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_.-]*)>`)
	bashLineRE    = regexp.MustCompile(`line (\d+):`)
)

// TestShellBlocksParse runs `bash -n` on the shell of every fenced block of every page (see
// script for what is shell), so that a command a reader copies at least parses: an unquoted
// "(" in a kubectl argument, a quote left open, a loop without its done.
func TestShellBlocksParse(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		for _, b := range parse(t, page).blocks {
			lines, at := script(b)
			if len(lines) == 0 {
				continue
			}
			if msg := bashSyntaxError(t, strings.Join(lines, "\n")+"\n"); msg != "" {
				// bash names the line of the script; the page's line is where a reader looks.
				msg = bashLineRE.ReplaceAllStringFunc(msg, func(m string) string {
					n, err := strconv.Atoi(bashLineRE.FindStringSubmatch(m)[1])
					if err != nil || n < 1 || n > len(at) {
						return m
					}
					return fmt.Sprintf("page line %d:", at[n-1])
				})
				t.Errorf("%s:%d: the %q block does not parse as shell:\n%s", page, b.line, b.info, msg)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no shell block found")
	}
}

// bashSyntaxError is what `bash -n` says of src, "" when it parses.
func bashSyntaxError(t *testing.T, src string) string {
	t.Helper()
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(src)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("running bash -n: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestScript(t *testing.T) {
	cases := []struct {
		name  string
		block block
		want  []string
	}{
		{"a script as it stands", block{info: "sh", lines: []string{"kubectl get sp", "# a comment"}}, []string{"kubectl get sp", "# a comment"}},
		{"a transcript without its output", block{info: "console", lines: []string{"$ bin/manager plugins", "PLUGIN ...", "$ echo $?", "0"}}, []string{"bin/manager plugins", "echo $?"}},
		{"a continued command", block{info: "console", lines: []string{"$ a \\", "  b", "out"}}, []string{"a \\", "  b"}},
		{"an untagged transcript", block{lines: []string{"$ kubectl apply -f x.yaml", "The SchedulerProfile \"x\" is invalid: ("}}, []string{"kubectl apply -f x.yaml"}},
		{"an untagged block of output", block{lines: []string{"Internal error occurred: ("}}, nil},
		{"placeholders", block{info: "sh", lines: []string{"kubectl describe sp <name>", "kubectl get lease schedops-<schedulerName> <<EOF"}}, []string{"kubectl describe sp name", "kubectl get lease schedops-schedulerName <<EOF"}},
		{"yaml", block{info: "yaml", lines: []string{"a: (b"}}, nil},
	}
	for _, tc := range cases {
		got, _ := script(tc.block)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: script (-want +got):\n%s", tc.name, diff)
		}
	}
	if bashSyntaxError(t, "kubectl get sp -o custom-columns=A:.status.conditions[?(@.type==\"Degraded\")].reason\n") == "" {
		t.Error("bash -n accepts an unquoted (: the test would not catch it")
	}
	if bashSyntaxError(t, "kubectl describe sp <name>\n") == "" {
		t.Error("bash -n accepts a placeholder at the end of a line: script need not replace it")
	}
}

// machinePathRE finds a path that exists on one machine only: a home or a work directory.
var machinePathRE = regexp.MustCompile(`(^|[\s=:'"(])/(home|Users|root|work)/`)

// TestNoMachinePaths keeps the paths of the machine a page was written on out of the pages: a
// command's output shows the path of its clone as <repository>/..., which every reader has.
func TestNoMachinePaths(t *testing.T) {
	for _, page := range pages(t) {
		for i, line := range strings.Split(string(readFile(t, page)), "\n") {
			if machinePathRE.MatchString(line) {
				t.Errorf("%s:%d: %q names a path of one machine; write <repository>/... or a relative path", page, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// conditionsSource is the file of the condition types and reasons.
const conditionsSource = "api/v1alpha1/conditions.go"

func readConditions(t *testing.T) *conditions.Conditions {
	t.Helper()
	c, err := conditions.Parse(filepath.Join(root, conditionsSource))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConditionsReference checks that the reference of conditions and reasons is the one that
// `make generate` writes from api/v1alpha1/conditions.go: a reason added, or set on another
// condition, without regenerating it fails here as well as in make verify.
func TestConditionsReference(t *testing.T) {
	var want strings.Builder
	if err := conditions.Render(&want, readConditions(t), conditionsSource); err != nil {
		t.Fatal(err)
	}
	got := string(readFile(t, filepath.Join("reference", "conditions.md")))
	if diff := cmp.Diff(want.String(), got); diff != "" {
		t.Errorf("docs/reference/conditions.md is not what hack/conditions-doc writes from %s; run make generate (-want +got):\n%s", conditionsSource, diff)
	}
}

// section is the prose of a page from the heading title to the next heading of its level or
// above.
func section(t *testing.T, page, title string) string {
	t.Helper()
	var out []string
	level := 0
	for _, line := range parse(t, page).prose {
		m := headingRE.FindStringSubmatch(line)
		if m != nil {
			l := strings.Index(line, " ")
			if level > 0 && l <= level {
				break
			}
			if strings.TrimSpace(m[1]) == title {
				level = l
				continue
			}
		}
		if level > 0 {
			out = append(out, line)
		}
	}
	if level == 0 {
		t.Fatalf("%s has no heading %q", page, title)
	}
	return strings.Join(out, "\n")
}

// codeWords are the words in backticks of text.
func codeWords(text string) []string {
	var out []string
	for _, m := range codeRE.FindAllString(text, -1) {
		out = append(out, strings.Trim(m, "`"))
	}
	return out
}

// TestProfileUnavailableReasons checks that the runbook of SchedOpsProfileUnavailable lists
// exactly the reasons of a profile's Available=False: not one of a Scheduler's, none missing.
// The reasons it names of other conditions (what holds a rollout up) are not its list.
func TestProfileUnavailableReasons(t *testing.T) {
	c := readConditions(t)
	page := filepath.Join("operations", "alerts.md")
	var listed []string
	for _, w := range codeWords(section(t, page, "SchedOpsProfileUnavailable")) {
		r, ok := c.Reason(w)
		available := ok && slices.ContainsFunc(r.SetOn, func(u conditions.Use) bool { return u.Type == "Available" })
		if available && !slices.Contains(listed, w) {
			listed = append(listed, w)
		}
	}
	want := c.ReasonsOn("SchedulerProfile", "Available", "False")
	slices.Sort(listed)
	slices.Sort(want)
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("%s: the reasons of SchedOpsProfileUnavailable are not a profile's Available=False reasons in %s (-code +page):\n%s", page, conditionsSource, diff)
	}
}

// conditionPairRE finds a condition with its status as the pages write it: `Degraded=True`.
var conditionPairRE = regexp.MustCompile("`([A-Za-z]+)=(True|False|Unknown)`")

// TestTroubleshootingReasons checks the table of Troubleshooting against the reasons of the
// code: each row's reason is set on the conditions and statuses the row names, and every reason
// of a condition that needs someone (ConfigValid=False, Available=False, Degraded=True) has a row.
func TestTroubleshootingReasons(t *testing.T) {
	c := readConditions(t)
	page := filepath.Join("tasks", "troubleshooting.md")
	rows := 0
	// covered are the reasons with the conditions that a row names them on.
	type reasonOn struct {
		conditions.Use
		reason string
	}
	covered := map[reasonOn]bool{}
	for _, line := range parse(t, page).prose {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "=") {
			continue
		}
		rows++
		var reason conditions.Reason
		found := false
		for _, w := range codeWords(cells[1]) {
			if r, ok := c.Reason(w); ok {
				reason, found = r, true
			}
		}
		if !found {
			t.Errorf("%s: %q names no reason of %s", page, strings.TrimSpace(cells[1]), conditionsSource)
			continue
		}
		for _, m := range conditionPairRE.FindAllStringSubmatch(cells[1], -1) {
			on := false
			for _, kind := range []string{"SchedulerProfile", "Scheduler"} {
				if reason.On(kind, m[1], m[2]) {
					covered[reasonOn{conditions.Use{Kind: kind, Type: m[1], Status: m[2]}, reason.Name}] = true
					on = true
				}
			}
			if !on {
				t.Errorf("%s: %q: %s is not set on %s=%s (%s)", page, strings.TrimSpace(cells[1]), reason.Name, m[1], m[2], conditionsSource)
			}
		}
	}
	if rows == 0 {
		t.Fatalf("%s: no table of conditions found", page)
	}
	for _, r := range c.Reasons {
		for _, u := range r.SetOn {
			needs := (u.Type == "ConfigValid" || u.Type == "Available") && u.Status == "False" || u.Type == "Degraded" && u.Status == "True"
			if needs && !covered[reasonOn{u, r.Name}] {
				t.Errorf("%s: no row for %s=%s, %s (of a %s)", page, u.Type, u.Status, r.Name, u.Kind)
			}
		}
	}
}

// tableRows are the rows of the first table of text whose header row is header ("| a | b |"),
// as trimmed cells.
func tableRows(t *testing.T, page string, text []string, header string) [][]string {
	t.Helper()
	var out [][]string
	in := false
	for _, line := range text {
		switch {
		case strings.TrimSpace(line) == header:
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			var cells []string
			for _, c := range strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ") {
				cells = append(cells, strings.TrimSpace(c))
			}
			out = append(out, cells)
		case in:
			return out
		}
	}
	if !in {
		t.Fatalf("%s: no table with the header %q", page, header)
	}
	return out
}

// noPlanner is a Planner that refuses and warns of nothing, so that the validators' warnings
// are their own.
type noPlanner struct{}

func (noPlanner) ProfileErrors(context.Context, *schedulingv1alpha1.SchedulerProfile, []schedulingv1alpha1.SchedulerProfile) (field.ErrorList, []string, error) {
	return nil, nil, nil
}

func (noPlanner) SchedulerErrors(context.Context, *schedulingv1alpha1.Scheduler) (field.ErrorList, []string, error) {
	return nil, nil, nil
}

// TestValidationWarnings checks the table of warnings of How validation works against the
// webhook: each warning that the validators give a profile or a Scheduler with every risky
// extender setting has a row, by its field path, and the advice codes the page names exist.
func TestValidationWarnings(t *testing.T) {
	page := filepath.Join("concepts", "validation.md")
	rows := tableRows(t, page, parse(t, page).prose, "| warning | on | why |")

	extenders := []schedulingv1alpha1.Extender{{
		URLPrefix:   "https://extender.example:8443",
		FilterVerb:  ptr.To("filter"),
		EnableHTTPS: ptr.To(true),
		TLSConfig:   &schedulingv1alpha1.ExtenderTLSConfig{Insecure: ptr.To(true)},
	}}
	scheme := runtime.NewScheme()
	if err := schedulingv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	profile := &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "risky"}, Spec: schedulingv1alpha1.SchedulerProfileSpec{Extenders: extenders}}
	profileWarnings, err := webhooks.NewProfileValidator(noPlanner{}, fake.NewClientBuilder().WithScheme(scheme).Build(), nil).ValidateCreate(context.Background(), profile)
	if err != nil {
		t.Fatal(err)
	}
	scheduler := &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: "risky"}, Spec: schedulingv1alpha1.SchedulerSpec{Extenders: extenders}}
	schedulerWarnings, err := webhooks.NewSchedulerValidator(noPlanner{}).ValidateCreate(context.Background(), scheduler)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for kind, warnings := range map[string][]string{"a profile": profileWarnings, "a Scheduler": schedulerWarnings} {
		for _, w := range warnings {
			path, _, _ := strings.Cut(w, ": ")
			path = "`" + regexp.MustCompile(`\[\d+\]`).ReplaceAllString(path, "[i]") + "`"
			if !slices.ContainsFunc(rows, func(row []string) bool {
				return len(row) == 3 && strings.HasPrefix(row[0], path) && strings.Contains(row[1], kind)
			}) {
				t.Errorf("%s: no row for the warning of %s at %s: %q", page, kind, path, w)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("the validators gave no warning: the test checks nothing")
	}

	codes := map[string]bool{}
	for _, check := range advice.Checks() {
		codes[check.Code] = true
	}
	for _, row := range rows {
		for _, code := range regexp.MustCompile(`\bSPA\d+\b`).FindAllString(row[0], -1) {
			if !codes[code] {
				t.Errorf("%s: the warnings name advice %s, which no check of the profile doctor has", page, code)
			}
		}
	}
}

// jsonFields are the JSON names of the fields of a struct type, those of inlined structs
// included.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous:
			out = append(out, jsonFields(f.Type)...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	return out
}

// TestProfileFieldTable checks that the field table of Profiles has a row for every field of a
// SchedulerProfile's spec, and none for a field it does not have.
func TestProfileFieldTable(t *testing.T) {
	page := filepath.Join("concepts", "profiles.md")
	var listed []string
	for _, row := range tableRows(t, page, parse(t, page).prose, "| field | what it is |") {
		listed = append(listed, strings.Trim(row[0], "`"))
	}
	want := jsonFields(reflect.TypeFor[schedulingv1alpha1.SchedulerProfileSpec]())
	slices.Sort(listed)
	slices.Sort(want)
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("%s: the field table is not SchedulerProfileSpec's fields (-code +page):\n%s", page, diff)
	}
}

// conditionColumnRE reads the JSONPath of a printer column that shows a condition's status.
var conditionColumnRE = regexp.MustCompile(`^\.status\.conditions\[\?\(@\.type=="([A-Za-z]+)"\)\]\.status$`)

// TestProfilePrinterColumns checks the table of the columns of `kubectl get sp` against the
// SchedulerProfile CRD's printer columns: the same columns in the same order, each with where it
// comes from (its JSONPath, or the condition whose status it shows) and whether -o wide is needed.
func TestProfilePrinterColumns(t *testing.T) {
	page := filepath.Join("concepts", "profiles.md")
	rows := tableRows(t, page, parse(t, page).prose, "| column | from | shown |")
	crdFile := filepath.Join(root, "config", "crd", "bases", "scheduling.schedops.io_schedulerprofiles.yaml")
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(readFile(t, crdFile), &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s: %d versions, the test knows one", crdFile, len(crd.Spec.Versions))
	}
	var want, got []string
	for _, col := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		from := "`" + col.JSONPath + "`"
		if m := conditionColumnRE.FindStringSubmatch(col.JSONPath); m != nil {
			from = "`" + m[1] + "` condition"
		}
		shown := "always"
		if col.Priority > 0 {
			shown = "`-o wide`"
		}
		want = append(want, fmt.Sprintf("`%s` from %s, %s", strings.ToUpper(col.Name), from, shown))
	}
	for _, row := range rows {
		if len(row) != 3 {
			t.Fatalf("%s: a row of the columns table with %d cells: %q", page, len(row), row)
		}
		// The page says more than where a column comes from; the test reads the part it checks.
		from := row[1]
		if code := codeWords(row[1]); len(code) > 0 {
			from = "`" + code[0] + "`"
			if strings.Contains(row[1], "`"+code[0]+"` condition") {
				from += " condition"
			}
		}
		got = append(got, fmt.Sprintf("%s from %s, %s", row[0], from, row[2]))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the columns of kubectl get sp are not the CRD's printer columns in %s (-CRD +page):\n%s", page, crdFile, diff)
	}
}

// metricRE finds a metric the operator registers, with its labels, in controllers/metrics/metrics.go.
var metricRE = regexp.MustCompile(`Name:\s+"(schedops_[a-z_]+)"[^}]*\}, \[\]string\{([^}]*)\}`)

// TestMetricLabels checks that the labels of each metric in the metrics reference are those the
// operator gives it.
func TestMetricLabels(t *testing.T) {
	src := string(readFile(t, filepath.Join(root, "controllers", "metrics", "metrics.go")))
	page := filepath.Join("reference", "metrics.md")
	rows := tableRows(t, page, parse(t, page).prose, "| metric | type | labels | what it counts |")
	found := metricRE.FindAllStringSubmatch(src, -1)
	if len(found) == 0 {
		t.Fatal("no schedops_ metric with its labels found in controllers/metrics/metrics.go")
	}
	for _, m := range found {
		var want []string
		for _, l := range strings.Split(m[2], ",") {
			want = append(want, strings.Trim(strings.TrimSpace(l), `"`))
		}
		i := slices.IndexFunc(rows, func(row []string) bool { return row[0] == "`"+m[1]+"`" })
		if i < 0 {
			t.Errorf("%s: no row for %s", page, m[1])
			continue
		}
		if diff := cmp.Diff(want, codeWords(rows[i][2])); diff != "" {
			t.Errorf("%s: the labels of %s are not the operator's (-code +page):\n%s", page, m[1], diff)
		}
	}
}

// actionHeading is the heading of the changes of a CHANGELOG section that need action before an
// upgrade, and actionRE the title of each.
var (
	actionHeading = "### Changes that need action before you upgrade"
	actionRE      = regexp.MustCompile(`^- \*\*(.+?)\.\*\*`)
)

// TestUpgradeNotesFollowTheChangelog keeps Upgrade the operator to notes from one released version
// to the next: a section "From <older> to <newer>" for each two versions that follow each other
// in CHANGELOG.md (the unreleased one is "the next release"), none for versions that were never
// released, and in each a section per change that needs action, titled as in the changelog.
func TestUpgradeNotesFollowTheChangelog(t *testing.T) {
	changelog := filepath.Join(root, "CHANGELOG.md")
	var versions []string
	actions := map[string][]string{}
	inActions := false
	for _, line := range parse(t, changelog).prose {
		if v, ok := strings.CutPrefix(line, "## "); ok {
			versions = append(versions, strings.TrimSpace(v))
			inActions = false
			continue
		}
		if strings.HasPrefix(line, "### ") {
			inActions = strings.TrimSpace(line) == actionHeading
			continue
		}
		if m := actionRE.FindStringSubmatch(line); m != nil && inActions {
			v := versions[len(versions)-1]
			actions[v] = append(actions[v], m[1])
		}
	}
	if len(versions) < 2 {
		t.Skipf("%s has %d versions: no upgrade yet", changelog, len(versions))
	}
	page := filepath.Join("tasks", "upgrade.md")
	var want, got []string
	for i := len(versions) - 1; i > 0; i-- {
		older, newer := versions[i], versions[i-1]
		if newer == "Unreleased" {
			newer = "the next release"
		}
		from := fmt.Sprintf("From %s to %s", older, newer)
		want = append(want, "## "+from)
		for _, a := range actions[versions[i-1]] {
			want = append(want, "### "+a)
		}
	}
	inNotes := false
	for _, line := range parse(t, page).prose {
		switch {
		case strings.HasPrefix(line, "## "):
			inNotes = strings.HasPrefix(line, "## From ")
			if inNotes {
				got = append(got, strings.TrimSpace(line))
			}
		case strings.HasPrefix(line, "### ") && inNotes:
			got = append(got, strings.TrimSpace(line))
		}
	}
	// A note may have sections besides the changelog's actions (what needs nothing done); the
	// actions must all be there, in the changelog's order.
	got = slices.DeleteFunc(got, func(h string) bool { return strings.HasPrefix(h, "### ") && !slices.Contains(want, h) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the upgrade notes do not follow the versions and actions of %s (-changelog +page):\n%s", page, changelog, diff)
	}
}

// TestPluginModuleCommands checks that Write and run your own plugin lists every offline command
// of the manager that a plugin module builds.
func TestPluginModuleCommands(t *testing.T) {
	page := filepath.Join("tasks", "write-your-own-plugin.md")
	var listed []string
	for _, line := range parse(t, page).prose {
		if cmd, ok := strings.CutPrefix(line, "- `manager "); ok {
			name, _, _ := strings.Cut(cmd, "`")
			listed = append(listed, name)
		}
	}
	for _, c := range manager.Commands(io.Discard) {
		if !slices.Contains(listed, c.Name) {
			t.Errorf("%s: the list of the manager's commands (- `manager <command>` ...) misses %s", page, c.Name)
		}
	}
}
