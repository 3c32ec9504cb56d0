package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/schedops/scheduler-profile-operator/pkg/operator/manager"
)

// TestWriteListsEveryFlagAndExitCode: the page has a row for each flag and exit code of each
// subcommand, under its heading.
func TestWriteListsEveryFlagAndExitCode(t *testing.T) {
	var page bytes.Buffer
	if err := write(&page, manager.Commands); err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(page.String(), "\n## manager ")
	for _, c := range manager.Commands(io.Discard) {
		var section string
		for _, s := range sections[1:] {
			if strings.HasPrefix(s, c.Name+"\n") {
				section = s
			}
		}
		if section == "" {
			t.Errorf("no section for manager %s", c.Name)
			continue
		}
		c.Flags.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(section, fmt.Sprintf("| `-%s` |", f.Name)) {
				t.Errorf("manager %s: no row for -%s", c.Name, f.Name)
			}
		})
		for _, e := range c.ExitCodes {
			if !strings.Contains(section, fmt.Sprintf("\n| %d | ", e.Code)) {
				t.Errorf("manager %s: no row for exit code %d", c.Name, e.Code)
			}
		}
	}
}

// TestUsageRefusesHelpWithoutUsageLine: a subcommand whose help does not start with its usage
// line is an error, not a page without one.
func TestUsageRefusesHelpWithoutUsageLine(t *testing.T) {
	var help bytes.Buffer
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(&help)
	fs.String("a", "", "A flag.")
	fs.Usage = func() { fs.PrintDefaults() }
	if _, err := usage(manager.Command{Name: "x", Flags: fs}, &help); err == nil {
		t.Error("usage accepted a help without a usage line")
	}
}
