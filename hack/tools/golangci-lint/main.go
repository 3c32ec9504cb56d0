// Command golangci-lint is golangci-lint with the module plugins this project lints with compiled
// in: kube-api-linter for the API types and logcheck for structured logging. It is what
// `golangci-lint custom` would build, without cloning golangci-lint's repository at build time:
// the versions are pinned by this module's go.mod.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Module plugins register themselves with golangci-lint in init; .golangci.yml enables them
	// as custom linters of type "module".
	_ "sigs.k8s.io/kube-api-linter"
	_ "sigs.k8s.io/logtools/logcheck/gclplugin"
)

const golangciLintModule = "github.com/golangci/golangci-lint/v2"

func main() {
	if err := commands.Execute(buildInfo()); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "The command is terminated due to an error: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}

// buildInfo reports the versions of golangci-lint and of the plugins as pinned by go.mod, so that
// `golangci-lint version` says what this binary is.
func buildInfo() commands.BuildInfo {
	info := commands.BuildInfo{Version: "unknown", Commit: "?", Date: "(unknown)", GoVersion: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	var plugins []string
	for _, dep := range bi.Deps {
		switch dep.Path {
		case golangciLintModule:
			info.Version = strings.TrimPrefix(dep.Version, "v")
		case "sigs.k8s.io/kube-api-linter", "sigs.k8s.io/logtools":
			plugins = append(plugins, dep.Path+"@"+dep.Version)
		}
	}
	if len(plugins) > 0 {
		info.Version += " with " + strings.Join(plugins, ", ")
	}
	return info
}
