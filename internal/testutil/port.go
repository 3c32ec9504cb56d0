package testutil

import (
	"testing"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
)

// FreePort returns a port on localhost that nothing listened on a moment ago, for a server a
// test starts.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
