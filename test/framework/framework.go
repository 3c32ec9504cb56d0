// Package framework starts the operator in the tests of the integration, bundle and end-to-end
// tiers, in the test process and with main's wiring: the manager options and the set-up of
// controllers.NewManager, changed only by what a test needs (no endpoints, its own log, more than
// one manager in a process). Each tier starts it this one way.
package framework

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/schedops/scheduler-profile-operator/controllers"
)

const (
	// syncTimeout bounds the wait for a new manager's cache to list what it watches.
	syncTimeout = 30 * time.Second
	// stopTimeout bounds the wait for a stopped manager to return.
	stopTimeout = 30 * time.Second
)

// Operator is a manager running in the test process.
type Operator struct {
	// Manager is the running manager: its cache, client and logger are the operator's.
	Manager ctrl.Manager
	// Log holds everything the manager logged.
	Log    *Log
	cancel context.CancelFunc
	done   chan error

	mu sync.Mutex
	// watched are the tests whose failure prints the log.
	watched map[testing.TB]bool
}

// Start runs the operator, controllers.SetupManager included, as the identity of cfg with the
// settings o, and returns once its cache has synced. Stop ends it.
func Start(cfg *rest.Config, o controllers.ManagerOptions) (*Operator, error) {
	return start(cfg, o, true)
}

// StartOperator is Start for one test: the operator stops when the test ends, and its log is
// printed if the test failed.
func StartOperator(t testing.TB, cfg *rest.Config, o controllers.ManagerOptions) *Operator {
	t.Helper()
	return startForTest(t, cfg, o, true)
}

// StartManager is StartOperator without the controller: the operator's manager and cache, for a
// test that runs the reconciler's passes itself.
func StartManager(t testing.TB, cfg *rest.Config, o controllers.ManagerOptions) *Operator {
	t.Helper()
	return startForTest(t, cfg, o, false)
}

func startForTest(t testing.TB, cfg *rest.Config, o controllers.ManagerOptions, withController bool) *Operator {
	t.Helper()
	op, err := start(cfg, o, withController)
	if err != nil {
		t.Fatalf("Starting the operator: %v", err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
	})
	op.LogOnFailure(t)
	return op
}

var setGlobalLogger sync.Once

func start(cfg *rest.Config, o controllers.ManagerOptions, withController bool) (*Operator, error) {
	// Controller-runtime complains once on stderr if nothing ever sets its global logger; each
	// manager here has a logger of its own.
	setGlobalLogger.Do(func() { ctrl.SetLogger(logr.Discard()) })
	log := &Log{}
	// Tests serve no endpoints: several managers run in one process, and on shared machines. A
	// test of the metrics endpoint asks for it on a free port.
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = "0"
	}
	o.HealthProbeBindAddress = "0"
	opts := o.ControllerRuntimeOptions()
	opts.Logger = funcr.New(log.write, funcr.Options{Verbosity: 1})
	// The tests of a package start a manager with the same controller one after the other.
	opts.Controller.SkipNameValidation = ptr.To(true)
	// A stopped manager hands its lease over at once rather than after it expires.
	opts.LeaderElectionReleaseOnCancel = true
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if withController {
		if err := controllers.SetupManager(mgr, o); err != nil {
			return nil, err
		}
	} else if err := controllers.IndexFields(mgr, o); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	op := &Operator{Manager: mgr, Log: log, cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return nil, errors.Join(fmt.Errorf("the manager's cache did not sync within %s:\n%s", syncTimeout, log), op.Stop())
	}
	return op, nil
}

// Stop stops the manager and waits until it has returned.
func (op *Operator) Stop() error {
	op.cancel()
	select {
	case err := <-op.done:
		op.done <- err // a later Stop returns the same
		if err != nil {
			return fmt.Errorf("the manager stopped with: %w", err)
		}
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("the manager did not stop within %s", stopTimeout)
	}
}

// LogOnFailure prints what the operator logs from now until the end of the test, if the test
// fails. Calls after the first for the same test do nothing.
func (op *Operator) LogOnFailure(t testing.TB) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.watched[t] {
		return
	}
	if op.watched == nil {
		op.watched = map[testing.TB]bool{}
	}
	op.watched[t] = true
	from := op.Log.len()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Operator log:\n%s", op.Log.since(from))
		}
	})
}

// AsServiceAccount returns a copy of the administrator's cfg that acts as the ServiceAccount
// namespace/name, with the groups its token would carry: every request of a client of it goes
// through the apiserver's authorizer as that identity.
func AsServiceAccount(cfg *rest.Config, namespace, name string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return cfg
}
