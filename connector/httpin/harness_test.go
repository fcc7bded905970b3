package httpin

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// testWait bounds every wait: never a timing assertion.
const testWait = 30 * time.Second

func open(t *testing.T, mod func(*Config)) *Input {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	if mod != nil {
		mod(cfg)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	in, err := New(cfg, input.Settings{ID: "web", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(t.Context(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

func (in *Input) url() string { return "http://" + in.Addr() + in.cfg.Path }

// scheduler stands in for the agent's loop: it polls the input when woken
// and commits each Poll result at once, keeping every event.
type scheduler struct {
	mu     sync.Mutex
	events []string
	stop   chan struct{}
	done   chan struct{}
}

func runScheduler(t *testing.T, in *Input) *scheduler {
	s := &scheduler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			evs, _ := in.Poll(t.Context(), nil, 256)
			if len(evs) > 0 {
				s.mu.Lock()
				for _, e := range evs {
					s.events = append(s.events, string(e.Payload))
				}
				s.mu.Unlock()
				in.Committed(len(evs))
				continue
			}
			select {
			case <-in.Wakeup():
			case <-s.stop:
				return
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *scheduler) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

func (s *scheduler) stored() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

type reply struct {
	status int
	header http.Header
	body   string
}

func post(t *testing.T, c *http.Client, url string, body []byte, headers ...string) reply {
	t.Helper()
	r, err := postE(t, c, url, body, headers...)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return r
}

// postE is post reporting a request that got no answer, for goroutines.
func postE(t *testing.T, c *http.Client, url string, body []byte, headers ...string) (reply, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if c == nil {
		c = &http.Client{Timeout: testWait}
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}, nil
}
