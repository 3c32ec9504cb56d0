package testutil

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// InvalidCauses returns the "<field>: <message>" of each cause of an Invalid status error (the
// refusal of an admission webhook or of the apiserver's validation), nil for no error, and fails
// the test for any other error.
func InvalidCauses(t testing.TB, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("error %v is not the refusal of an invalid object", err)
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}
