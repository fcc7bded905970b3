//go:build unix

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recordsPerRequest is how many records each request of a pushKill
// carries; record k of request "s-r" is named "s-r-k".
const recordsPerRequest = 20

// pushKill is the kill test of an input that answers each request only
// once its records are stored: four senders post requests until the
// agent is killed (SIGKILL); after the restart every record of every
// request answered 200 must reach the engine.
type pushKill struct {
	inputs string // the inputs: section, %d the port it listens on
	path   string // the URL path requests go to
	// request builds the request carrying the records of key.
	request func(url, key string) (*http.Request, error)
	// delivered counts the record names the engine received.
	delivered func(t *testing.T, rc *receiver) map[string]int
}

// run returns the restarted agent's root and process, still running,
// the requests answered 200 before the kill and the record names
// delivered in the end.
func (pk pushKill) run(t *testing.T) (root *agentRoot, restarted *proc, answered int, got map[string]int) {
	t.Helper()
	rc := startReceiver(t, "e2e-token-0123456789")
	hold := holdPort(t)
	root = newRoot(t, options{port: rc.port})
	root.opts.inputs = fmt.Sprintf(pk.inputs, hold.port)
	root.writeConfig()
	hold.release()
	agent := root.startReady()
	url := fmt.Sprintf("http://127.0.0.1:%d%s", hold.port, pk.path)

	var mu sync.Mutex
	ok := map[string]bool{} // request keys answered 200
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
				key := fmt.Sprintf("%d-%d", s, r)
				req, err := pk.request(url, key)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					return // the agent was killed
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					ok[key] = true
					mu.Unlock()
				}
			}
		})
	}
	eventually(t, deliverTimeout, "some records delivered", func() bool { return len(pk.delivered(t, rc)) >= 2000 })
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	close(stop)
	wg.Wait()
	if len(ok) == 0 {
		t.Fatal("no request answered 200 before the kill")
	}

	restarted = root.startReady()
	missing := ""
	eventually(t, deliverTimeout, fmt.Sprintf("every record of the %d requests answered 200 delivered", len(ok)), func() bool {
		got = pk.delivered(t, rc)
		missing = ""
		for key := range ok {
			for k := range recordsPerRequest {
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
	return root, restarted, len(ok), got
}
