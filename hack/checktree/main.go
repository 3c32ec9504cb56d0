// Command checktree fails when git tracks build output: an executable or object file, other
// binary content, a file larger than a limit, or any file in dist/ (make release's output).
// `make verify` runs it, so a `go build` output committed by mistake (a 71 MB binary once was)
// cannot come back.
//
//	go run ./hack/checktree [-C dir] [-limit bytes] [-allow file]
//
// The allowlist names, one per line, tracked files that may be binary or large; # starts a comment.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// defaultLimit is the largest tracked file allowed without an allowlist entry. The largest
// tracked files are generated CRDs of about 150 KiB.
const defaultLimit = 512 << 10

// sniffLen is how much of a file is read to tell binary content from text, as git does.
const sniffLen = 8000

// magics are the first bytes of executable, object and archive formats.
var magics = []struct {
	prefix []byte
	what   string
}{
	{[]byte("\x7fELF"), "an ELF executable or object"},
	{[]byte{0xfe, 0xed, 0xfa, 0xce}, "a Mach-O executable"},
	{[]byte{0xfe, 0xed, 0xfa, 0xcf}, "a Mach-O executable"},
	{[]byte{0xce, 0xfa, 0xed, 0xfe}, "a Mach-O executable"},
	{[]byte{0xcf, 0xfa, 0xed, 0xfe}, "a Mach-O executable"},
	{[]byte{0xca, 0xfe, 0xba, 0xbe}, "a Mach-O universal executable"},
	{[]byte("MZ"), "a Windows executable"},
	{[]byte("!<arch>\n"), "an object archive"},
	{[]byte("\x00asm"), "a WebAssembly module"},
}

func main() {
	fs := flag.NewFlagSet("checktree", flag.ExitOnError)
	dir := fs.String("C", ".", "the git work tree to check")
	limit := fs.Int64("limit", defaultLimit, "the largest size in bytes of a tracked file not on the allowlist")
	allowFile := fs.String("allow", "hack/checktree/allow.txt", "the allowlist, relative to -C")
	_ = fs.Parse(os.Args[1:])
	problems, err := run(*dir, *allowFile, *limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checktree:", err)
		os.Exit(2)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "tracked files that look like build output (git rm --cached them, or list them in the allowlist):")
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		os.Exit(1)
	}
}

// run checks every file git tracks in dir and returns one line per problem.
func run(dir, allowFile string, limit int64) ([]string, error) {
	allow, err := readAllowlist(filepath.Join(dir, allowFile))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("git", "-C", dir, "ls-files", "-z")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var problems []string
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if name == "" || allow[name] {
			continue
		}
		if dir, what, ok := outputDir(name); ok {
			problems = append(problems, name+": in "+dir+", "+what)
			continue
		}
		problem, err := checkFile(filepath.Join(dir, name), limit)
		if err != nil {
			return nil, err
		}
		if problem != "" {
			problems = append(problems, name+": "+problem)
		}
	}
	return problems, nil
}

// outputDirs are the directories that only build output goes to, whatever its content: the text
// files of make release (install.yaml, SHA256SUMS) are no binaries and may be small.
var outputDirs = []struct{ dir, what string }{
	{"dist/", "the output of make release"},
}

// outputDir reports whether name is in one of outputDirs, and which.
func outputDir(name string) (dir, what string, ok bool) {
	for _, d := range outputDirs {
		if strings.HasPrefix(name, d.dir) {
			return d.dir, d.what, true
		}
	}
	return "", "", false
}

// checkFile says what is wrong with one tracked file, or "" when nothing is.
func checkFile(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil // deleted in the work tree; git status reports it
	}
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", nil
	}
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	for _, m := range magics {
		if bytes.HasPrefix(head, m.prefix) && (len(m.prefix) > 2 || bytes.IndexByte(head, 0) >= 0) {
			return m.what, nil
		}
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "binary content", nil
	}
	if info.Size() > limit {
		return fmt.Sprintf("%d bytes, over the limit of %d", info.Size(), limit), nil
	}
	return "", nil
}

// readAllowlist reads the allowlist; a missing file allows nothing.
func readAllowlist(path string) (map[string]bool, error) {
	allow := map[string]bool{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return allow, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			allow[line] = true
		}
	}
	return allow, sc.Err()
}
