package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: keys and the values of a key are listed with their comments, Go names in the
// comments read as values, a constant named after another gets its value, and other constants
// (a field manager, an unexported key) stay off the page.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	src := `package keys

const other = "other-value"

// Keys of the example: the keys a test writes.
const (
	// LabelMode on a Namespace is ModeOn or ModeOff.
	LabelMode = "example.io/mode"
	// AnnotationNote, with any value, is a note.
	AnnotationNote = "example.io/note"
	// labelHidden is not exported.
	labelHidden = "example.io/hidden"
)

// Values of LabelMode.
const (
	// ModeOn turns it on.
	ModeOn = "on"
	// ModeOff is named after another constant.
	ModeOff = other
)

// FieldManager is not a key.
const FieldManager = "manager"
`
	path := filepath.Join(dir, "keys.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := write(&out, []string{path}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"## Keys of the example\n\nThe keys a test writes.\n",
		"| `example.io/mode` | On a Namespace is `on` or `other-value`. |\n",
		"| `example.io/note` | With any value, is a note. |\n",
		"## Values of `example.io/mode`\n",
		"| `on` | Turns it on. |\n",
		"| `other-value` | Is named after another constant. |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the page lacks %q:\n%s", want, got)
		}
	}
	for _, notWant := range []string{"example.io/hidden", "manager"} {
		if strings.Contains(got, notWant) {
			t.Errorf("the page lists %q:\n%s", notWant, got)
		}
	}
}
