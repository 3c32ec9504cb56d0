package chromium

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadRecords loads a clean page and one that does everything a self-contained page must
// not (a stylesheet from elsewhere, a console error, an uncaught exception) in one browser, and
// wants nothing recorded for the first and each of those for the second; the outside stylesheet
// fails to load, the namespace having no network.
func TestLoadRecords(t *testing.T) {
	b := Start(t, 320, 200)
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.html")
	bad := filepath.Join(dir, "bad.html")
	pages := map[string]string{
		clean: `<!DOCTYPE html><title>clean</title><p style="background:#00f">blue</p>`,
		bad: `<!DOCTYPE html><title>bad</title><link rel="stylesheet" href="https://example.com/a.css">
<script>console.error("boom"); notDefined()</script>`,
	}
	for file, html := range pages {
		if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := b.Load(ctx, "file://"+clean); err != nil {
		t.Fatal(err)
	}
	if want := []string{"file://" + clean}; !slices.Equal(b.Requests(), want) || len(b.Problems()) > 0 {
		t.Errorf("clean page: requests %q, problems %q; want %q and none", b.Requests(), b.Problems(), want)
	}
	var title string
	if err := b.Eval(ctx, "document.title", &title); err != nil || title != "clean" {
		t.Errorf("document.title = %q, %v; want clean", title, err)
	}
	shot, err := b.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if size := img.Bounds().Size(); size.X != 320 || size.Y != 200 {
		t.Errorf("the screenshot is %v, want the viewport's 320x200", size)
	}

	if err := b.Load(ctx, "file://"+bad); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.Requests(), "https://example.com/a.css") {
		t.Errorf("requests %q do not list the outside stylesheet", b.Requests())
	}
	problems := strings.Join(b.Problems(), "\n")
	for _, want := range []string{"loading https://example.com/a.css failed: net::ERR_INTERNET_DISCONNECTED", "console.error: boom", "uncaught exception", "notDefined is not defined"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems do not contain %q:\n%s", want, problems)
		}
	}
}

// TestStartAgainAfterACrash runs, as $CHROMIUM, a script that exits with a segmentation fault's
// status its first time (as Chromium was seen to while it started) and runs Chromium after
// that: Start opens a page in the second Chromium, which loads one.
func TestStartAgainAfterACrash(t *testing.T) {
	chromium, err := Binary()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "chromium")
	counter := filepath.Join(dir, "starts")
	body := "#!/bin/sh\necho start >> " + counter + "\n" +
		"if [ \"$(wc -l < " + counter + ")\" -eq 1 ]; then echo 'Segmentation fault' >&2; exit 139; fi\n" +
		"exec " + chromium + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CHROMIUM", script)
	b := Start(t, 320, 200)
	page := filepath.Join(dir, "page.html")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><title>again</title>`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Load(ctx, "file://"+page); err != nil {
		t.Fatal(err)
	}
	var title string
	if err := b.Eval(ctx, "document.title", &title); err != nil || title != "again" {
		t.Errorf("document.title = %q, %v; want again", title, err)
	}
	if starts, err := os.ReadFile(counter); err != nil || strings.Count(string(starts), "start") != 2 {
		t.Errorf("Chromium was started %q times (%v), want 2", starts, err)
	}
}
