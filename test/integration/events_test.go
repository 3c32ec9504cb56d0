package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// waitForEvent waits for an events.k8s.io event about profile p with the event type and
// reason, whose note contains noteContains.
func (k *cluster) waitForEvent(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, eventType, reason, noteContains string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("a %s event %s about %s", eventType, reason, p.Name), func(ctx context.Context) error {
		return k.findEvent(ctx, p, eventType, reason, noteContains)
	})
}

// findEvent returns an error that lists the events about profile p if none has the event type
// and reason and a note that contains noteContains.
func (k *cluster) findEvent(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, eventType, reason, noteContains string) error {
	var list eventsv1.EventList
	if err := k.admin.List(ctx, &list); err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	var seen []string
	for _, e := range list.Items {
		if e.Regarding.Kind != "SchedulerProfile" || e.Regarding.UID != p.UID {
			continue
		}
		if e.Type == eventType && e.Reason == reason && strings.Contains(e.Note, noteContains) {
			return nil
		}
		seen = append(seen, e.Type+"/"+e.Reason)
	}
	return fmt.Errorf("no %s event %s about %s with %q in its note (its events: %v)", eventType, reason, p.Name, noteContains, seen)
}
