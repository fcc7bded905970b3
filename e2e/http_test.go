//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// httpIDs counts the "id" of every event with one the receiver wrote.
func httpIDs(t *testing.T, rc *receiver) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range receivedGroups(t, rc.out) {
		for _, o := range g {
			if id, ok := o["id"].(string); ok {
				out[id]++
			}
		}
	}
	return out
}

// The built agent with an http input is killed (SIGKILL) while four
// senders stream POSTs of 20 NDJSON records; after the restart every
// record of every request it had answered 200 is delivered.
func TestHTTPKillLosesNothingAnswered(t *testing.T) {
	skipShort(t)
	root, restarted, answered, got := pushKill{
		inputs: `inputs:
  - id: web
    type: http
    listen: 127.0.0.1:%d
    bearer-token: e2e-bearer-token
`,
		path: "/",
		request: func(url, key string) (*http.Request, error) {
			var body bytes.Buffer
			for k := range recordsPerRequest {
				fmt.Fprintf(&body, "{\"id\":\"%s-%d\"}\n", key, k)
			}
			req, err := http.NewRequest(http.MethodPost, url, &body)
			if err == nil {
				req.Header.Set("Authorization", "Bearer e2e-bearer-token")
			}
			return req, err
		},
		delivered: httpIDs,
	}.run(t)
	t.Logf("kill -9: %d requests answered 200, all %d records delivered; %d records of requests not answered were stored too (the senders would resend them)",
		answered, answered*recordsPerRequest, len(got)-answered*recordsPerRequest)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	if strings.Contains(root.logText(), "e2e-bearer-token") {
		t.Error("the bearer token is in the log")
	}
}
