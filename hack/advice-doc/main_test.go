package main

import (
	"os"
	"strings"
	"testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
)

// TestReferenceIsFresh: docs/reference/advice.md is what the checks write; make generate
// rewrites it, and make verify fails on a stale one.
func TestReferenceIsFresh(t *testing.T) {
	var b strings.Builder
	if err := write(&b, advice.Checks()); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/reference/advice.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(page) != b.String() {
		t.Error("docs/reference/advice.md is stale: run make generate")
	}
	for _, c := range advice.Checks() {
		if !strings.Contains(b.String(), "### "+c.Code+" ") {
			t.Errorf("the page has no heading for %s", c.Code)
		}
	}
}

func TestWriteRefusesARepeatedCode(t *testing.T) {
	checks := advice.Checks()
	checks = append(checks, checks[0])
	if err := write(&strings.Builder{}, checks); err == nil {
		t.Errorf("write accepted %s twice", checks[0].Code)
	}
}
