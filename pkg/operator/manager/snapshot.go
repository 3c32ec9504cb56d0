package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

// runSnapshot is `manager snapshot`: it writes what scheduling reads of the cluster of a
// kubeconfig as one YAML List, for `manager simulate --cluster`. It only reads the cluster.
func runSnapshot(args []string, stdout, stderr io.Writer) int {
	fs, o := snapshotFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	client, err := kubeClient(o.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	w := stdout
	if o.out != "-" {
		f, err := os.Create(o.out)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return exitError
		}
		defer f.Close() //nolint:errcheck // closed explicitly below; this only covers the error paths
		w = f
	}
	list := simulate.NewListWriter(w)
	stats, err := simulate.Snapshot(context.Background(), client, o.SnapshotOptions, list.Write)
	if err == nil {
		err = list.Close()
	}
	if f, ok := w.(*os.File); ok && f != stdout && err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stderr, "Wrote %s (%d bytes)\n", stats, list.Bytes)
	return 0
}

// snapshotOptions are the flags of `manager snapshot`.
type snapshotOptions struct {
	kubeconfig, out string
	simulate.SnapshotOptions
}

// snapshotFlags is the flag set of `manager snapshot`, which prints its help to stderr, and the
// options it sets.
func snapshotFlags(stderr io.Writer) (*flag.FlagSet, *snapshotOptions) {
	o := &snapshotOptions{}
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "The kubeconfig of the cluster; by default $KUBECONFIG or ~/.kube/config.")
	fs.StringVar(&o.out, "o", "-", "The file to write; - is standard output.")
	fs.BoolVar(&o.StripPods, "strip-pods", false, "Leave out what scheduling does not read of pods (annotations, commands, environment, probes), so that the snapshot can be shared.")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: manager snapshot [--kubeconfig FILE] [-o FILE] [--strip-pods]")
		fmt.Fprintln(stderr, "Writes the Nodes, the bound and pending Pods, and the other objects scheduling reads as one YAML List.")
		fs.PrintDefaults()
	}
	return fs, o
}

// kubeClient is a clientset of a kubeconfig file, or of the default loading rules when it is "".
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// liveCluster snapshots the cluster of a kubeconfig into memory.
func liveCluster(ctx context.Context, kubeconfig string) (*simulate.Cluster, error) {
	client, err := kubeClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	return simulate.LiveCluster(ctx, client)
}
