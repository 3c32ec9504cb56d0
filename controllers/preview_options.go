package controllers

import (
	"io"

	"github.com/schedops/scheduler-profile-operator/controllers/preview"
)

// PreviewOptions bound the operator's previews of changes (preview.Options); outside callers
// set them in ManagerOptions.Preview.
type PreviewOptions = preview.Options

// The defaults of PreviewOptions, as the manager's flags name them (preview.DefaultMaxPods and
// the others say why each is what it is).
const (
	DefaultPreviewMaxPods         = preview.DefaultMaxPods
	DefaultPreviewCPULimit        = preview.DefaultCPULimit
	DefaultPreviewTimeout         = preview.DefaultTimeout
	DefaultPreviewMemoryLimit     = preview.DefaultMemoryLimit
	DefaultPreviewMaxObjects      = preview.DefaultMaxObjects
	DefaultPreviewRefreshInterval = preview.DefaultRefreshInterval
)

// PreviewWorkerCommand is the hidden subcommand of the manager binary that runs a preview worker
// (preview.WorkerCommand): main dispatches it to RunPreviewWorker.
const PreviewWorkerCommand = preview.WorkerCommand

// RunPreviewWorker runs one preview in this process, as the operator's previewer starts it
// (preview.RunWorker), and returns the exit code.
func RunPreviewWorker(stdin io.Reader, stdout, stderr io.Writer) int {
	return preview.RunWorker(stdin, stdout, stderr)
}
