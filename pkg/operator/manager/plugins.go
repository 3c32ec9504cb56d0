package manager

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// runPlugins is `manager plugins`: the plugins a profile can name, in-tree and out-of-tree, with
// the extension points each implements (where multiPoint enables it). It returns the exit code.
func runPlugins(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "Usage: manager plugins")
		fmt.Fprintln(stderr, "Lists the scheduler plugins a SchedulerProfile can use and their extension points.")
		return 2
	}
	// Building the in-tree plugins logs through klog; the output here is the table only.
	klog.SetLogger(logr.Discard())
	plugins, err := registry.Plugins(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tSOURCE\tEXTENSION POINTS")
	for _, p := range plugins {
		source := "in-tree"
		if p.OutOfTree {
			source = "out-of-tree"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, source, strings.Join(p.ExtensionPoints, ","))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
