package testutil

import (
	"encoding/json"
	"testing"
)

// Typed turns an apply configuration into the typed object it describes, through its JSON.
func Typed[T any](t testing.TB, applyConfig any) *T {
	t.Helper()
	data, err := json.Marshal(applyConfig)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}
