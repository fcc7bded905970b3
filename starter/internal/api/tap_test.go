package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
)

func tapServer(t *testing.T) (*tap.Hub, *Client, string) {
	t.Helper()
	st := running()
	st.Inputs = []agent.InputStatus{{ID: "app", Type: "file"}, {ID: "own", Type: "self"}}
	hub := tap.NewHub(nil)
	t.Cleanup(hub.Close)
	srv := serve(t, Options{Source: &fakeSource{st: st}, Tap: hub.Subscribe})
	c, err := NewClient(Settings{Listen: strings.TrimPrefix(srv.URL, "http://"), Token: testFileToken})
	if err != nil {
		t.Fatal(err)
	}
	return hub, c, srv.URL
}

// waitActive waits, bounded, until the server subscribed.
func waitActive(t *testing.T, hub *tap.Hub, s tap.Stage) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !hub.Active(s) {
		if time.Now().After(deadline) {
			t.Fatal("the tap never subscribed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A tap streams the events of its stage and input, and ends at its limit
// with what it missed.
func TestTapStreamsEvents(t *testing.T) {
	hub, c, _ := tapServer(t)
	var got []TapLine
	errc := make(chan error, 1)
	go func() {
		errc <- c.Tap(t.Context(), TapQuery{Filter: tap.Filter{Stage: tap.StageSent, Input: "app", Rate: 100}, Limit: 2}, func(l TapLine) error {
			got = append(got, l)
			return nil
		})
	}()
	waitActive(t, hub, tap.StageSent)
	hub.Publish(tap.StageSent, "own", func() []byte { return []byte(`{"not":"this input"}`) })
	hub.Publish(tap.StageProcessed, "app", func() []byte { return []byte(`{"not":"this stage"}`) })
	hub.Publish(tap.StageSent, "app", func() []byte { return []byte(`{"payload":"one"}`) })
	hub.Publish(tap.StageSent, "app", func() []byte { return []byte(`not json`) })
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Event) != `{"payload":"one"}` || got[0].Stage != "sent" || got[0].Input != "app" ||
		got[1].Text != "not json" || got[2].End != TapEndLimit || got[2].Shown != 2 {
		t.Fatalf("lines %+v", got)
	}
}

// A stopping agent ends the stream with a last line saying so.
func TestTapEndsWhenAgentStops(t *testing.T) {
	hub, c, _ := tapServer(t)
	errc := make(chan error, 1)
	var last TapLine
	go func() {
		errc <- c.Tap(t.Context(), TapQuery{Filter: tap.Filter{Stage: tap.StageInput}}, func(l TapLine) error { last = l; return nil })
	}()
	waitActive(t, hub, tap.StageInput)
	hub.Close()
	if err := <-errc; err != nil || last.End != TapEndStopped {
		t.Fatalf("err %v, last line %+v", err, last)
	}
}

// The tap is guarded like every route that shows payloads; bad queries
// are refused with the reason.
func TestTapRefusals(t *testing.T) {
	_, c, url := tapServer(t)
	if code, _ := request(t, http.MethodGet, url+TapPath, nil); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", code)
	}
	if code, _ := request(t, http.MethodGet, url+TapPath, map[string]string{"Host": "evil.example", "Authorization": "Bearer " + testFileToken}); code != http.StatusForbidden {
		t.Errorf("foreign host: %d", code)
	}
	tests := []struct {
		q    string
		code int
		want string
	}{
		{"?stage=queued", 400, "stage must be"},
		{"?input=nope", 404, "no input with id"},
		{"?rate=0", 400, "rate must be"},
		{"?rate=1000000", 400, "rate must be"},
		{"?limit=-1", 400, "limit must be"},
	}
	for _, tt := range tests {
		code, body := get(t, url+TapPath+tt.q, "")
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s", tt.q, code, body)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := c.Tap(ctx, TapQuery{Filter: tap.Filter{Input: "nope"}}, func(TapLine) error { return nil })
	var re *ResponseError
	if !errors.As(err, &re) || re.Code != 404 {
		t.Fatalf("client error %v", err)
	}
}
