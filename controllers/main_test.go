package controllers

import (
	"os"
	"testing"
)

// TestMain runs the preview worker when the tests' previewer starts this binary as one: a test
// binary is what os.Executable finds, not the manager.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == PreviewWorkerCommand {
		os.Exit(RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
