// Package chromium loads a page the tree writes (the report of `manager simulate -o html`) in
// Debian's headless Chromium, for tests that check what a browser makes of it.
//
// Chromium runs in a network namespace of its own, whose only link is a loopback that is down,
// and the test drives it over the DevTools protocol on a pipe (--remote-debugging-pipe), so
// neither Chromium nor the page can reach anything, the test's machine included; every request
// the page makes, and every console error, exception or failed load, is recorded.
package chromium

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// MakeTarget installs the Chromium that Binary looks for.
const MakeTarget = "make chromium"

// Binary returns the headless Chromium to run: $CHROMIUM, else Debian's chromium-headless-shell
// (what MakeTarget installs) or chromium on the PATH.
func Binary() (string, error) {
	if b := os.Getenv("CHROMIUM"); b != "" {
		return exec.LookPath(b)
	}
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if b, err := exec.LookPath(name); err == nil {
			return b, nil
		}
	}
	return "", errors.New("neither chromium-headless-shell nor chromium is on the PATH")
}

// flags turn off everything Chromium does besides loading the page: background networking,
// component and safe-browsing updates, sync, metrics, first-run pages. The sandbox is off
// because a test may run as root, which Chromium's sandbox refuses; the network namespace is
// what keeps the page in. The colour profile is sRGB, so that a screenshot's pixels are the
// page's CSS colours.
var flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
	"--no-first-run", "--no-default-browser-check", "--disable-default-apps", "--disable-extensions",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-domain-reliability", "--disable-breakpad", "--disable-client-side-phishing-detection",
	"--metrics-recording-only", "--safebrowsing-disable-auto-update", "--password-store=basic",
	"--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,InterestFeedContentSuggestions",
	"--mute-audio", "--hide-scrollbars", "--force-color-profile=srgb",
}

// Browser is one headless Chromium and one page (tab) in it, of a fixed viewport.
type Browser struct {
	cmd     *exec.Cmd
	stderr  *tail
	pipe    *os.File
	msgs    chan message
	readErr error
	nextID  int
	session string

	requests []string
	urls     map[string]string
	problems []string
	loaded   bool
	stopped  sync.Once
}

// message is one message of the DevTools protocol: a command, its response or an event.
type message struct {
	ID        int             `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start runs headless Chromium in a network namespace of its own with a page of width×height
// CSS pixels at one device pixel each, and stops it when the test ends. It skips the test when
// Chromium is not installed (naming MakeTarget), or when this user cannot make a network
// namespace: the page is only loaded where it can reach nothing. With CHROMIUM_REQUIRED=1 in the
// environment, it fails the test instead.
func Start(t testing.TB, width, height int) *Browser {
	t.Helper()
	// The make tier sets CHROMIUM_REQUIRED=1: there, not running is a failure, not a skip.
	skip := t.Skipf
	if os.Getenv("CHROMIUM_REQUIRED") == "1" {
		skip = t.Fatalf
	}
	bin, err := Binary()
	if err != nil {
		skip("headless Chromium is not installed (%v): run %s as root", err, MakeTarget)
	}
	isolate := []string{"unshare", "--net"}
	if os.Geteuid() != 0 {
		isolate = []string{"unshare", "--user", "--map-root-user", "--net"}
	}
	if out, err := exec.Command(isolate[0], append(isolate[1:], "true")...).CombinedOutput(); err != nil {
		skip("%s cannot make a network namespace to load the page in (%v: %s)", strings.Join(isolate, " "), err, strings.TrimSpace(string(out)))
	}

	// Chromium has been seen to crash while it starts (a segmentation fault answering the first
	// command, before any page of the tree is loaded), once in many runs on a busy machine: such
	// a crash says nothing of the page, so Chromium is started again, twice at most, each crash
	// logged. A crash once a page is open is the page's problem (Inspector.targetCrashed).
	for attempt := 1; ; attempt++ {
		b, err := launch(t, bin, isolate, width, height)
		if err == nil {
			return b
		}
		b.stop() // its stderr is all there once it has exited
		if !errors.Is(err, errClosed) || attempt == 3 {
			t.Fatalf("opening a page in %s: %v\nits stderr ends with:\n%s", bin, err, b.stderr)
		}
		t.Logf("Chromium exited while it started (attempt %d), starting it again: %v\nits stderr ends with:\n%s", attempt, err, b.stderr)
	}
}

// errClosed is Chromium closing its end of the pipe: it exited.
var errClosed = errors.New("chromium closed the pipe")

// launch starts Chromium and opens its page; it returns the Browser, stopped when the test ends,
// even when opening the page failed.
func launch(t testing.TB, bin string, isolate []string, width, height int) (*Browser, error) {
	t.Helper()
	// Chromium reads commands from its fd 3 and writes responses and events to its fd 4.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := slices.Concat(isolate[1:], []string{bin}, flags, []string{"--user-data-dir=" + t.TempDir(), "about:blank"})
	b := &Browser{cmd: exec.Command(isolate[0], args...), stderr: &tail{}, pipe: cmdW, msgs: make(chan message, 256), urls: map[string]string{}}
	b.cmd.ExtraFiles = []*os.File{cmdR, outW}
	b.cmd.Stderr = b.stderr
	// A group of its own, so that the renderer and GPU processes are stopped with it.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	_ = cmdR.Close()
	_ = outW.Close()
	go b.read(outR)
	t.Cleanup(b.stop)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b, b.open(ctx, width, height)
}

// open creates the page, attaches to it and enables the events that Load records.
func (b *Browser) open(ctx context.Context, width, height int) error {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return err
	}
	b.session = attached.SessionID
	for _, domain := range []string{"Page", "Network", "Runtime", "Log"} {
		if err := b.call(ctx, domain+".enable", nil, nil); err != nil {
			return err
		}
	}
	return b.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// Load navigates the page to url and returns once it and its fonts have loaded.
func (b *Browser) Load(ctx context.Context, url string) error {
	b.loaded = false
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigating to %s: %s", url, nav.ErrorText)
	}
	for !b.loaded {
		if err := b.pump(ctx); err != nil {
			return fmt.Errorf("waiting for %s to load: %w", url, err)
		}
	}
	var ready any
	return b.Eval(ctx, "document.fonts.ready.then(() => true)", &ready)
}

// Requests are the URLs the page requested since Start, in order: each loaded page's own, then
// what it requested.
func (b *Browser) Requests() []string { return b.requests }

// Problems are what went wrong since Start while pages loaded and ran: console messages of level warning
// or error (Chromium's own about the page included, such as a failed load), uncaught exceptions,
// failed requests and a crashed renderer.
func (b *Browser) Problems() []string { return b.problems }

// Eval evaluates a JavaScript expression in the page, awaits it when it is a promise, and
// decodes its value, which must be JSON, into v.
func (b *Browser) Eval(ctx context.Context, expr string, v any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, e.Text, e.Exception.Description)
	}
	return json.Unmarshal(res.Result.Value, v)
}

// Screenshot returns the page's viewport as a PNG.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	var shot struct {
		Data string `json:"data"`
	}
	if err := b.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(shot.Data)
}

// call sends a command (to the page once it is attached) and waits for its response, recording
// the events that arrive meanwhile.
func (b *Browser) call(ctx context.Context, method string, params, result any) error {
	b.nextID++
	id := b.nextID
	cmd := map[string]any{"id": id, "method": method}
	if params != nil {
		cmd["params"] = params
	}
	if b.session != "" {
		cmd["sessionId"] = b.session
	}
	data, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	if _, err := b.pipe.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", method, ctx.Err())
		case m, ok := <-b.msgs:
			if !ok {
				return fmt.Errorf("%s: %w: %v", method, errClosed, b.readErr)
			}
			if m.ID != id {
				b.record(m)
				continue
			}
			if m.Error != nil {
				return fmt.Errorf("%s: %s", method, m.Error.Message)
			}
			if result == nil {
				return nil
			}
			return json.Unmarshal(m.Result, result)
		}
	}
}

// pump records the next event.
func (b *Browser) pump(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case m, ok := <-b.msgs:
		if !ok {
			return fmt.Errorf("%w: %v", errClosed, b.readErr)
		}
		b.record(m)
		return nil
	}
}

// read passes each message Chromium writes, NUL-terminated, to msgs until the pipe closes.
func (b *Browser) read(f *os.File) {
	defer close(b.msgs)
	r := bufio.NewReader(f)
	for {
		data, err := r.ReadBytes(0)
		if err != nil {
			b.readErr = err
			return
		}
		var m message
		if err := json.Unmarshal(data[:len(data)-1], &m); err != nil {
			b.readErr = fmt.Errorf("undecodable message %q: %w", data, err)
			return
		}
		b.msgs <- m
	}
}

// event is the union of the parameters of the events record reads.
type event struct {
	RequestID string `json:"requestId"`
	Request   struct {
		URL string `json:"url"`
	} `json:"request"`
	ErrorText string `json:"errorText"`
	Type      string `json:"type"`
	Args      []struct {
		Value       any    `json:"value"`
		Description string `json:"description"`
	} `json:"args"`
	ExceptionDetails struct {
		Text      string `json:"text"`
		Exception struct {
			Description string `json:"description"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
	Entry struct {
		Source string `json:"source"`
		Level  string `json:"level"`
		Text   string `json:"text"`
		URL    string `json:"url"`
	} `json:"entry"`
}

// record keeps what an event tells about the page: its requests and its problems.
func (b *Browser) record(m message) {
	var e event
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &e); err != nil {
			b.problems = append(b.problems, fmt.Sprintf("undecodable %s event: %v", m.Method, err))
			return
		}
	}
	switch m.Method {
	case "Page.loadEventFired":
		b.loaded = true
	case "Network.requestWillBeSent":
		b.requests = append(b.requests, e.Request.URL)
		b.urls[e.RequestID] = e.Request.URL
	case "Network.loadingFailed":
		b.problems = append(b.problems, fmt.Sprintf("loading %s failed: %s", b.urls[e.RequestID], e.ErrorText))
	case "Runtime.consoleAPICalled":
		if e.Type == "error" || e.Type == "warning" || e.Type == "assert" {
			var args []string
			for _, a := range e.Args {
				args = append(args, fmt.Sprint(a.Value)+a.Description)
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case "Runtime.exceptionThrown":
		b.problems = append(b.problems, fmt.Sprintf("uncaught exception: %s %s", e.ExceptionDetails.Text, e.ExceptionDetails.Exception.Description))
	case "Log.entryAdded":
		if e.Entry.Level == "error" || e.Entry.Level == "warning" {
			b.problems = append(b.problems, fmt.Sprintf("console %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case "Inspector.targetCrashed":
		b.problems = append(b.problems, "the page's renderer crashed")
	}
}

// stop asks Chromium to close and, if it has not within 10 seconds, kills its process group;
// only the first call does.
func (b *Browser) stop() { b.stopped.Do(b.close) }

func (b *Browser) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.session = ""
	_ = b.call(ctx, "Browser.close", nil, nil)
	_ = b.pipe.Close()
	done := make(chan struct{})
	go func() {
		// Its exit status tells nothing: the test has what it needed, or failed already.
		_ = b.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// tail keeps the last 4 KiB written to it: Chromium's stderr, for a failed test.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - 4096; over > 0 {
		w.buf = w.buf[over:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
