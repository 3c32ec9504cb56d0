package testutil

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// RequestLog records the HTTP requests of the clients of a rest.Config it wrapped: the
// wire-level count of writes, whatever client or client method made them.
type RequestLog struct {
	mu       sync.Mutex
	requests []string
}

// Wrap returns a copy of cfg whose requests are recorded.
func (l *RequestLog) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.requests = append(l.requests, req.Method+" "+req.URL.Path)
			l.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// Take returns the write requests (anything but GET: lists, gets and watches are reads) and the
// number of all requests recorded so far, and forgets them.
func (l *RequestLog) Take() (writes []string, all int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.requests {
		if !strings.HasPrefix(r, http.MethodGet+" ") {
			writes = append(writes, r)
		}
	}
	all = len(l.requests)
	l.requests = nil
	return writes, all
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
