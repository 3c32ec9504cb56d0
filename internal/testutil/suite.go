package testutil

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
)

// RunSuite runs a tier's tests between setUp and tearDown (which runs after a failed set-up
// too), cancelling setUp's context before tearDown. The work directory workDir is removed when
// every test passed; otherwise it is kept and named, for the logs of what the suite ran. what
// names the suite in its messages.
func RunSuite(m *testing.M, what string, setUp func(context.Context) error, tearDown func(), workDir func() string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setUp(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s set-up failed: %v\n", what, err)
		tearDown()
		return 1
	}
	code := m.Run()
	cancel()
	tearDown()
	if dir := workDir(); code == 0 {
		_ = os.RemoveAll(dir)
	} else if dir != "" {
		fmt.Fprintf(os.Stderr, "the logs of the %s suite are in %s\n", what, dir)
	}
	return code
}

// GetOK gets url and fails unless the answer is 200.
func GetOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return nil
}
