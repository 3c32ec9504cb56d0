package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/component-base/version"
)

// Discovery is what the reconcilers ask the apiserver's discovery: the APIs it serves (for the
// APIs feature gates need) and its version (for the version skew policy).
type Discovery interface {
	discovery.ServerResourcesInterface
	discovery.ServerVersionInterface
}

// ServerVersionFunc is a discovery.ServerVersionInterface of a function, for ManagerOptions.ServerVersion.
type ServerVersionFunc func() (*apimachineryversion.Info, error)

// ServerVersion calls f.
func (f ServerVersionFunc) ServerVersion() (*apimachineryversion.Info, error) { return f() }

// WithServerVersion is d with its version read from v instead, when v is set.
func WithServerVersion(d discovery.ServerResourcesInterface, v discovery.ServerVersionInterface) Discovery {
	return struct {
		discovery.ServerResourcesInterface
		discovery.ServerVersionInterface
	}{d, v}
}

// versionRecheck is how often the apiserver's version is read again: an upgrade of the control
// plane changes it under a running operator. A refused rollout is retried as often (plan.APIRecheck).
const versionRecheck = plan.APIRecheck

// serverVersion reads the apiserver's version through discovery and keeps it for versionRecheck,
// so that a pass does not cost a request.
type serverVersion struct {
	source discovery.ServerVersionInterface
	// scheduler is the Kubernetes version of the scheduler the operator runs.
	scheduler string
	now       func() time.Time

	mu     sync.Mutex
	info   *apimachineryversion.Info
	readAt time.Time
}

// newServerVersion checks the scheduler the operator ships against the version source; nil (no
// checks) for a nil source.
func newServerVersion(source discovery.ServerVersionInterface) *serverVersion {
	if source == nil {
		return nil
	}
	return &serverVersion{source: source, scheduler: schedulerVersion(), now: time.Now}
}

// skew judges the scheduler against the apiserver's current version.
func (s *serverVersion) skew() (versionSkew, error) {
	if s == nil {
		return versionSkew{}, nil
	}
	info, err := s.read()
	if err != nil {
		return versionSkew{}, err
	}
	return judgeSkew(s.scheduler, info), nil
}

// read returns the cached version, read again once it is versionRecheck old. A failed read
// keeps the last version read, if there is one.
func (s *serverVersion) read() (*apimachineryversion.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info != nil && s.now().Sub(s.readAt) < versionRecheck {
		return s.info, nil
	}
	info, err := s.source.ServerVersion()
	if err != nil {
		if s.info != nil {
			return s.info, nil
		}
		return nil, fmt.Errorf("reading the apiserver's version: %w", err)
	}
	s.info, s.readAt = info, s.now()
	return info, nil
}

// kubernetesVersion is the version of the k8s.io/kubernetes module in go.mod, whose
// kube-scheduler the scheduler binary is; a test keeps the two equal.
const kubernetesVersion = "v1.37.2"

// schedulerVersion is the Kubernetes version of the scheduler binary, which is built from the
// same k8s.io/kubernetes module as the operator, with the same version ldflags (Makefile
// LDFLAGS). A build without them (go test, go run) reports v0.0.0-master: the module's version
// says the same then.
func schedulerVersion() string {
	if v := version.Get().GitVersion; minorOf(v) != nil {
		return v
	}
	return kubernetesVersion
}

// maxOlderMinors is how many minors older than kube-apiserver kube-scheduler may be, by
// Kubernetes' version skew policy; it may never be newer.
const maxOlderMinors = 1

// versionSkew is what the skew policy says of the scheduler against the apiserver.
type versionSkew struct {
	// refused is the reason not to roll out: the scheduler would be newer than the apiserver, or
	// a version cannot be told. The message names both versions.
	refused string
	// unsupported is set when the scheduler is older than the policy supports: it is rolled out
	// all the same, since refusing would not stop the one already running, which is the same binary.
	unsupported string
}

// judgeSkew compares the scheduler's version with the apiserver's by major and minor: patch,
// pre-release and build metadata ("v1.37.0-rc.1", "v1.36.5+k3s1") do not count. An apiserver
// version that cannot be read as one (nor from its major and minor fields) is refused: the
// policy cannot be shown to hold.
func judgeSkew(scheduler string, server *apimachineryversion.Info) versionSkew {
	s := minorOf(scheduler)
	if s == nil {
		return versionSkew{refused: fmt.Sprintf("the scheduler's own version %q is not a Kubernetes version, so its skew to the apiserver cannot be checked; nothing is rolled out", scheduler)}
	}
	a, shown := serverMinor(server)
	if a == nil {
		return versionSkew{refused: fmt.Sprintf("the apiserver reports version %q, which is not a Kubernetes version, so the scheduler %s cannot be shown to be no newer than it (Kubernetes' version skew policy); nothing is rolled out, and a running scheduler keeps running", shown, scheduler)}
	}
	switch {
	case s.GreaterThan(a):
		return versionSkew{refused: fmt.Sprintf("the scheduler is Kubernetes %s and the apiserver %s: Kubernetes' version skew policy does not allow a kube-scheduler newer than its kube-apiserver, so nothing is rolled out, and a running scheduler keeps running until the control plane is upgraded", scheduler, shown)}
	case s.Major() != a.Major() || s.AddMinor(maxOlderMinors).LessThan(a):
		return versionSkew{unsupported: fmt.Sprintf("the scheduler is Kubernetes %s and the apiserver %s: a kube-scheduler more than %s older than its kube-apiserver is beyond what Kubernetes' version skew policy supports; it is rolled out all the same, and an upgrade of the operator brings a newer scheduler", scheduler, shown, minorsText(maxOlderMinors))}
	}
	return versionSkew{}
}

// minorsText says n minors in words, for messages.
func minorsText(n int) string {
	if n == 1 {
		return "one minor"
	}
	return fmt.Sprintf("%d minors", n)
}

// serverMinor is the apiserver's major and minor from its gitVersion or, failing that, from its
// major and minor fields (some distributions report "30+"), and the version as shown in messages.
func serverMinor(info *apimachineryversion.Info) (*utilversion.Version, string) {
	if info == nil {
		return nil, ""
	}
	if v := minorOf(info.GitVersion); v != nil {
		return v, info.GitVersion
	}
	if v := minorOf(info.Major + "." + info.Minor); v != nil && info.Major != "" {
		return v, v.String()
	}
	return nil, info.GitVersion
}

// minorOf is the major and minor of a version string; nil when it is none, or v0.0 (a build
// without version ldflags: v0.0.0-master).
func minorOf(s string) *utilversion.Version {
	v, err := utilversion.ParseMajorMinor(s)
	if err != nil || (v.Major() == 0 && v.Minor() == 0) {
		return nil
	}
	return v
}
