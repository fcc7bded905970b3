//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
	rc := startReceiver(t, "e2e-token-0123456789")
	hold := holdPort(t)
	root := newRoot(t, options{port: rc.port})
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: web
    type: http
    listen: 127.0.0.1:%d
    bearer-token: e2e-bearer-token
`, hold.port)
	root.writeConfig()
	hold.release()
	agent := root.startReady()
	url := fmt.Sprintf("http://127.0.0.1:%d/", hold.port)

	var mu sync.Mutex
	answered := map[string]bool{} // request keys answered 200
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 20 * time.Second}
	for s := range 4 {
		wg.Go(func() {
			// Bounded in count and time; ends at stop or when the agent
			// is gone.
			end := time.Now().Add(2 * time.Minute)
			for r := 0; r < 100_000 && time.Now().Before(end); r++ {
				select {
				case <-stop:
					return
				default:
				}
				var body bytes.Buffer
				for k := range 20 {
					fmt.Fprintf(&body, "{\"id\":\"%d-%d-%d\"}\n", s, r, k)
				}
				req, _ := http.NewRequest(http.MethodPost, url, &body)
				req.Header.Set("Authorization", "Bearer e2e-bearer-token")
				resp, err := client.Do(req)
				if err != nil {
					return // the agent was killed
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					answered[fmt.Sprintf("%d-%d", s, r)] = true
					mu.Unlock()
				}
			}
		})
	}
	eventually(t, deliverTimeout, "some records delivered", func() bool { return len(httpIDs(t, rc)) >= 2000 })
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	close(stop)
	wg.Wait()
	mu.Lock()
	nAnswered := len(answered)
	mu.Unlock()
	if nAnswered == 0 {
		t.Fatal("no request answered 200 before the kill")
	}

	restarted := root.startReady()
	var got map[string]int
	missing := ""
	eventually(t, deliverTimeout, fmt.Sprintf("every record of the %d requests answered 200 delivered", nAnswered), func() bool {
		got = httpIDs(t, rc)
		missing = ""
		for key := range answered {
			for k := range 20 {
				if got[fmt.Sprintf("%s-%d", key, k)] == 0 {
					missing = fmt.Sprintf("%s-%d", key, k)
					return false
				}
			}
		}
		return true
	})
	if missing != "" {
		t.Fatalf("%s lost", missing)
	}
	extra := len(got) - nAnswered*20
	t.Logf("kill -9: %d requests answered 200, all %d records delivered; %d records of requests not answered were stored too (the senders would resend them)",
		nAnswered, nAnswered*20, extra)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	if strings.Contains(root.logText(), "e2e-bearer-token") {
		t.Error("the bearer token is in the log")
	}
}
