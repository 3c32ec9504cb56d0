// Package docs holds the documentation pages; its tests keep them true. Every command of a
// `console` block is run and its output compared with the page, every relative link must resolve
// (anchors included), every page is reachable from the index, every metric the operator
// registers is in the metrics reference, the profile the pages show is the sample that is
// applied, and no user page carries a commit hash or a date: pages are manuals, history is in
// CHANGELOG.md and git.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
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
	src, err := os.ReadFile(filepath.Join(root, "controllers", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(filepath.Join("reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`Name:\s+"(schedops_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(names) == 0 {
		t.Fatal("no schedops_ metric found in controllers/metrics.go")
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
