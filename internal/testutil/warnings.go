package testutil

import (
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Warnings records the warnings an apiserver returns to a client (admission warnings).
type Warnings struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeader records one warning.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// Take returns the warnings recorded since the last Take, and forgets them.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// WarningClient is a client of the apiserver of cfg, with scheme, that records the warnings it
// receives.
func WarningClient(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) (client.Client, *Warnings) {
	t.Helper()
	recorded := &Warnings{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = recorded
	c, err := client.New(wcfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, recorded
}
