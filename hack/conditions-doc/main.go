// Command conditions-doc writes the reference of the condition types and reasons, from the
// constants and doc comments of api/v1alpha1/conditions.go, so that the page lists exactly the
// conditions and reasons the operator sets, and on which kinds, types and statuses (the "Set on:"
// sentence of each reason; see package conditions). `make generate` runs it:
//
//	go run ./hack/conditions-doc api/v1alpha1/conditions.go > docs/reference/conditions.md
package main

import (
	"fmt"
	"os"

	"github.com/schedops/scheduler-profile-operator/hack/conditions-doc/conditions"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conditions-doc api/v1alpha1/conditions.go")
		os.Exit(2)
	}
	c, err := conditions.Parse(os.Args[1])
	if err == nil {
		err = conditions.Render(os.Stdout, c, os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conditions-doc:", err)
		os.Exit(1)
	}
}
