// Command crash exits with status 1 at once: packed as /kube-scheduler in an image, it makes every
// scheduler container of that image crash-loop, for the real-node tier's rollback test.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "crash: this image's scheduler exits at once (test/node)")
	os.Exit(1)
}
