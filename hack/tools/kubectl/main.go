// Command kubectl is upstream kubectl (k8s.io/kubernetes/cmd/kubectl) at the Kubernetes version of
// the operator, built from its own tools module (make bin/k8s/kubectl) for the tests that run
// kubectl against the local cluster, so that they never depend on a kubectl on PATH.
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// As upstream's main: the log verbosity is set before the command is built.
	_, _ = logs.GlogSetter(cmd.GetLogVerbosity(os.Args))
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
