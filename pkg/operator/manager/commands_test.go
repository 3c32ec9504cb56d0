package manager

import (
	"bytes"
	"strings"
	"testing"
)

// TestCommandsExitCodes holds the reference's exit codes to what the subcommands return: bad
// flags and -h exit as documented, and the codes are in ascending order.
func TestCommandsExitCodes(t *testing.T) {
	run := map[string]func([]string, *bytes.Buffer, *bytes.Buffer) int{
		"render":   func(a []string, o, e *bytes.Buffer) int { return runRender(a, o, e) },
		"snapshot": func(a []string, o, e *bytes.Buffer) int { return runSnapshot(a, o, e) },
		"simulate": func(a []string, o, e *bytes.Buffer) int { return runSimulate(a, o, e) },
	}
	commands := Commands(&bytes.Buffer{})
	if len(commands) != len(run) {
		t.Fatalf("Commands() lists %d subcommands, want %d", len(commands), len(run))
	}
	for _, c := range commands {
		t.Run(c.Name, func(t *testing.T) {
			documented := map[int]string{}
			for i, e := range c.ExitCodes {
				if i > 0 && e.Code <= c.ExitCodes[i-1].Code {
					t.Errorf("exit code %d listed after %d", e.Code, c.ExitCodes[i-1].Code)
				}
				documented[e.Code] = e.Meaning
			}
			var stdout, stderr bytes.Buffer
			code := run[c.Name]([]string{"--no-such-flag"}, &stdout, &stderr)
			if !strings.HasPrefix(documented[code], "Bad flags") {
				t.Errorf("an unknown flag exits %d, documented as %q", code, documented[code])
			}
			stderr.Reset()
			code = run[c.Name]([]string{"-h"}, &stdout, &stderr)
			if !strings.Contains(documented[code], "-h prints the help with this code") {
				t.Errorf("-h exits %d, documented as %q", code, documented[code])
			}
			if !strings.HasPrefix(stderr.String(), "Usage: manager "+c.Name) {
				t.Errorf("-h printed %q, want the usage of manager %s", stderr.String(), c.Name)
			}
		})
	}
}
