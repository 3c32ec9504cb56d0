package preview

import (
	"os"
	"testing"
)

// crashWorkerEnv, when set, has the preview worker of this test binary panic before it reads its
// input: TestPreviewWorkerCrash's worker that crashes.
const crashWorkerEnv = "SPO_TEST_PREVIEW_WORKER_CRASH"

// TestMain runs the preview worker when the tests' Previewer starts this binary as one: a test
// binary is what os.Executable finds, not the manager.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerCommand {
		if os.Getenv(crashWorkerEnv) != "" {
			panic("the preview worker crashed on purpose")
		}
		os.Exit(RunWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
