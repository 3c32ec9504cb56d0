package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PollInterval is how often Poll, Eventually and Consistently call their condition: a wait ends
// within a tenth of a second of the state it waits for, and the polled apiserver hardly notices.
const PollInterval = 100 * time.Millisecond

// Poll calls cond every PollInterval, starting at once, until it returns nil, and then returns
// nil. If timeout passes or ctx ends first, it returns cond's last error, which says what was not
// there yet. cond gets ctx, without the timeout: a call that the timeout would cut short (a
// client's rate limiter refuses to wait past a deadline) would fail for a reason that says
// nothing about the state. cond runs on the caller's goroutine, so a test's cond may end the test
// with t.Fatal when waiting longer is pointless.
func Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(deadline, PollInterval, true, func(context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case last == nil:
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("%w while waiting: %w", ctx.Err(), last)
	default:
		return fmt.Errorf("not within %s: %w", timeout, last)
	}
}

// Eventually waits with Poll until cond returns nil, and fails the test with cond's last error
// if that does not happen within timeout. what names the awaited state in the failure.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := Poll(t.Context(), timeout, cond); err != nil {
		t.Fatalf("Waiting for %s: %v", what, err)
	}
}

// Consistently calls cond every PollInterval for duration and fails the test as soon as it
// returns an error. what names the state that must hold. As with Poll, cond's context has no
// deadline.
func Consistently(t testing.TB, duration time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	deadline, cancel := context.WithTimeout(t.Context(), duration)
	defer cancel()
	err := wait.PollUntilContextCancel(deadline, PollInterval, true, func(context.Context) (bool, error) {
		return false, cond(t.Context())
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatalf("%s stopped holding: %v", what, err)
	}
}
