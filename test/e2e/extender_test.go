package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// filterExtender is an HTTP scheduler extender that passes only the nodes it allows.
type filterExtender struct {
	allowed string
	calls   atomic.Int32
}

func (e *filterExtender) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var args extenderv1.ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.calls.Add(1)
	result := extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
	var names []string
	if args.NodeNames != nil {
		names = *args.NodeNames
	} else if args.Nodes != nil {
		for _, n := range args.Nodes.Items {
			names = append(names, n.Name)
		}
	}
	var passed []string
	for _, n := range names {
		if n == e.allowed {
			passed = append(passed, n)
		} else {
			result.FailedNodes[n] = "refused by the test extender"
		}
	}
	result.NodeNames = &passed
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(result)
}

// TestHTTPExtender: a profile's HTTP extender is called, and its filter decision is obeyed.
func TestHTTPExtender(t *testing.T) {
	nodes := makeNodes(t, "extender", nodeSpec{name: "big", cpus: 32}, nodeSpec{name: "small", cpus: 2})
	ext := &filterExtender{allowed: "extender-small"}
	addr := serveExtender(t, http.StripPrefix("/scheduler", ext), nil)

	p := applyProfile(t, fmt.Sprintf(`
metadata: {name: e2e-extender}
spec:
  extenders:
  - urlPrefix: http://%s/scheduler
    filterVerb: filter
    nodeCacheCapable: true
    httpTimeout: 5s`, addr))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)

	// Without the extender, LeastAllocated would prefer the big node.
	for i, n := range schedule(t, nodes.pod("ext-0", "e2e-extender", 100), nodes.pod("ext-1", "e2e-extender", 100)) {
		if n.Name != "extender-small" {
			t.Errorf("pod %d landed on %s; the extender allows only extender-small", i, n.Name)
		}
	}
	if ext.calls.Load() < 2 {
		t.Errorf("the extender was called %d times, want at least once per pod", ext.calls.Load())
	}
}

// serveExtender serves h on a port of 127.0.0.1 until the test ends, over TLS with tlsConfig
// when it is not nil, and returns the address.
func serveExtender(t *testing.T, h http.Handler, tlsConfig *tls.Config) net.Addr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr()
}
