// Command followmods prints, one per line as `go get` takes them (path@version), the modules that
// a go.mod requires at an older version than the operator's go.mod, so that a module built beside
// the operator can follow it and share its compiled packages (internal/gomods). make
// previous-release builds the previous release with them (go build -modfile).
//
//	go run ./hack/followmods --operator go.mod bin/previous/v0.1.0/src/go.mod
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/schedops/scheduler-profile-operator/internal/gomods"
)

func main() {
	operator := flag.String("operator", "go.mod", "the operator's go.mod, whose versions to follow")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: followmods [--operator go.mod] <go.mod>")
		os.Exit(2)
	}
	if err := run(*operator, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "followmods:", err)
		os.Exit(1)
	}
}

func run(operator, gomod string) error {
	want, err := gomods.Versions(operator)
	if err != nil {
		return err
	}
	have, err := gomods.Versions(gomod)
	if err != nil {
		return err
	}
	older, err := gomods.Older(have, want)
	if err != nil {
		return err
	}
	for _, m := range older {
		fmt.Printf("%s@%s\n", m.Path, m.Want)
	}
	return nil
}
