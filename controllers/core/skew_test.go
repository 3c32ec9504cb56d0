package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

func TestJudgeSkew(t *testing.T) {
	const refused, unsupported, allowed = "refused", "unsupported", "allowed"
	tests := []struct {
		name      string
		scheduler string
		server    apimachineryversion.Info
		want      string
		// mentions are in the message.
		mentions []string
	}{
		{name: "same patch", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.37.2"}, want: allowed},
		{name: "older patch of the same minor", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.37.0"}, want: allowed},
		{name: "a release candidate of the same minor", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.37.0-rc.1"}, want: allowed},
		{name: "one minor newer apiserver", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.38.0"}, want: allowed},
		{name: "a distribution's build metadata", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.37.1+k3s1"}, want: allowed},
		{name: "older minor apiserver", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.36.5+k3s1"}, want: refused,
			mentions: []string{"v1.37.2", "v1.36.5+k3s1", "newer than its kube-apiserver"}},
		{name: "older minor with a pre-release scheduler", scheduler: "v1.37.0-rc.1", server: apimachineryversion.Info{GitVersion: "v1.36.9"}, want: refused,
			mentions: []string{"v1.37.0-rc.1", "v1.36.9"}},
		{name: "older major", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v0.99.0"}, want: refused},
		{name: "two minors newer apiserver", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v1.39.1"}, want: unsupported,
			mentions: []string{"v1.37.2", "v1.39.1", "more than one minor older"}},
		{name: "newer major", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v2.0.0"}, want: unsupported},
		{name: "gitVersion unparseable, major and minor fields with a plus", scheduler: "v1.37.2",
			server: apimachineryversion.Info{GitVersion: "custom-build", Major: "1", Minor: "36+"}, want: refused, mentions: []string{"v1.37.2", "1.36"}},
		{name: "gitVersion unparseable, major and minor fields allowed", scheduler: "v1.37.2",
			server: apimachineryversion.Info{GitVersion: "custom-build", Major: "1", Minor: "37+"}, want: allowed},
		{name: "apiserver unparseable", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "latest"}, want: refused,
			mentions: []string{`"latest"`, "v1.37.2", "not a Kubernetes version"}},
		{name: "apiserver empty", scheduler: "v1.37.2", server: apimachineryversion.Info{}, want: refused},
		{name: "apiserver built without version ldflags", scheduler: "v1.37.2", server: apimachineryversion.Info{GitVersion: "v0.0.0-master+$Format:%H$"}, want: refused,
			mentions: []string{"v0.0.0-master"}},
		{name: "scheduler unparseable", scheduler: "v1", server: apimachineryversion.Info{GitVersion: "v1.37.2"}, want: refused,
			mentions: []string{`"v1"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeSkew(tc.scheduler, &tc.server)
			verdict, msg := allowed, ""
			switch {
			case got.refused != "" && got.unsupported != "":
				t.Fatalf("Both refused and unsupported: %+v", got)
			case got.refused != "":
				verdict, msg = refused, got.refused
			case got.unsupported != "":
				verdict, msg = unsupported, got.unsupported
			}
			if verdict != tc.want {
				t.Fatalf("judgeSkew(%q, %+v) = %s (%q), want %s", tc.scheduler, tc.server, verdict, msg, tc.want)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("Message %q does not mention %q", msg, m)
				}
			}
		})
	}
}

// TestSchedulerVersion: a test binary has no version ldflags; the scheduler's version is then
// kubernetesVersion, which is go.mod's k8s.io/kubernetes.
func TestSchedulerVersion(t *testing.T) {
	if v := schedulerVersion(); v != kubernetesVersion {
		t.Errorf("schedulerVersion() = %q, want %q", v, kubernetesVersion)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var inGoMod string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/kubernetes" && strings.HasPrefix(f[1], "v") {
			inGoMod = f[1]
		}
	}
	if inGoMod != kubernetesVersion {
		t.Errorf("go.mod requires k8s.io/kubernetes %q; kubernetesVersion is %q: bump it with the module", inGoMod, kubernetesVersion)
	}
}

// TestServerVersionCache: the version is read once per versionRecheck, and a failed read keeps
// the last one read.
func TestServerVersionCache(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reads := 0
	reply := &apimachineryversion.Info{GitVersion: "v1.36.0"}
	var fail error
	s := newServerVersion(ServerVersionFunc(func() (*apimachineryversion.Info, error) {
		reads++
		return reply, fail
	}))
	s.scheduler, s.now = "v1.37.2", func() time.Time { return now }

	expect := func(wantRefused bool, wantReads int) {
		t.Helper()
		got, err := s.skew()
		if err != nil {
			t.Fatal(err)
		}
		if (got.refused != "") != wantRefused || reads != wantReads {
			t.Fatalf("skew() = %+v after %d reads, want refused %v after %d reads", got, reads, wantRefused, wantReads)
		}
	}
	expect(true, 1)
	reply = &apimachineryversion.Info{GitVersion: "v1.37.0"}
	now = now.Add(versionRecheck - time.Second)
	expect(true, 1) // cached
	now = now.Add(time.Second)
	expect(false, 2) // read again: the control plane was upgraded
	fail = errors.New("connection refused")
	now = now.Add(versionRecheck)
	expect(false, 3) // the last version read

	var none *serverVersion
	if got, err := none.skew(); err != nil || got != (versionSkew{}) {
		t.Errorf("A nil checker: %+v, %v; want no verdict", got, err)
	}
	first := newServerVersion(ServerVersionFunc(func() (*apimachineryversion.Info, error) { return nil, fail }))
	if _, err := first.skew(); err == nil {
		t.Error("A first read that fails: no error")
	}
}
