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
// there yet. cond runs on the caller's goroutine, so a test's cond may end the test with t.Fatal
// when waiting longer is pointless.
func Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		// A call cut short by the deadline says less about the state than the one before it.
		if err != nil && (ctx.Err() == nil || last == nil) {
			last = err
		}
		return err == nil, nil
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
// returns an error. what names the state that must hold.
func Consistently(t testing.TB, duration time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), duration)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, PollInterval, true, func(ctx context.Context) (bool, error) {
		// An error from a call that the end of duration cut short is not a broken state.
		if err := cond(ctx); err != nil && ctx.Err() == nil {
			return false, err
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatalf("%s stopped holding: %v", what, err)
	}
}
