package localcluster

import (
	"net"
	"strconv"
	"testing"
)

// TestWithFree checks that chosen ports are kept and the others are distinct free ports.
func TestWithFree(t *testing.T) {
	p, err := Ports{APIServer: 6443}.withFree()
	if err != nil {
		t.Fatal(err)
	}
	if p.APIServer != 6443 {
		t.Errorf("APIServer port %d, want the given 6443", p.APIServer)
	}
	seen := map[int]bool{}
	for _, port := range []int{p.Etcd, p.EtcdPeer, p.APIServer, p.ControllerManager, p.Scheduler, p.Kwok} {
		if port == 0 || seen[port] {
			t.Errorf("ports %+v: zero or repeated %d", p, port)
		}
		seen[port] = true
		if port == p.APIServer {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("port %d is not free after withFree returned: %v", port, err)
			continue
		}
		_ = l.Close()
	}
}
