package upgrade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type recorder struct {
	mu       sync.Mutex
	reports  []Report
	restarts int
}

func (r *recorder) report(rep Report) { r.mu.Lock(); r.reports = append(r.reports, rep); r.mu.Unlock() }

func (r *recorder) phases() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rep := range r.reports {
		if len(out) == 0 || out[len(out)-1] != rep.Phase.String() {
			out = append(out, rep.Phase.String())
		}
	}
	return strings.Join(out, ",")
}

func TestManagerHandle(t *testing.T) {
	content := []byte("the new binary")
	sum := sha256.Sum256(content)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(content))
	}))
	defer srv.Close()
	pub, priv, _ := GenerateKey(nil)
	for _, tc := range []struct {
		name        string
		version     string
		allowDown   bool
		says        string // what the staged binary's `version` prints
		checkFails  bool
		wantPhases  string
		wantErr     string
		wantRestart bool
	}{
		{name: "staged and switched", version: "1.1.0", says: "edge-agent 1.1.0", wantPhases: "Downloading,Installing", wantRestart: true},
		{name: "the binary names another version", version: "1.1.0", says: "edge-agent 1.0.9", wantPhases: "Downloading,Installing,InstallFailed",
			wantErr: `the new binary says "edge-agent 1.0.9"`},
		{name: "config check fails", version: "1.1.0", says: "edge-agent 1.1.0", checkFails: true, wantPhases: "Downloading,Installing,InstallFailed",
			wantErr: "rejects the config in force"},
		{name: "downgrade refused", version: "0.9.0", wantPhases: "InstallFailed", wantErr: "downgrade from 1.0.0 to 0.9.0 refused"},
		{name: "downgrade allowed", version: "0.9.0", allowDown: true, says: "edge-agent 0.9.0", wantPhases: "Downloading,Installing", wantRestart: true},
		{name: "not a version", version: "../x", wantPhases: "InstallFailed", wantErr: "not a semantic version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Layout{Dir: t.TempDir()}
			rec := &recorder{}
			m, err := NewManager(Options{Layout: l, PublicKey: pub, Self: Slot{Version: "1.0.0", Path: "/opt/edge-agent/bin/edge-agent"},
				Report: rec.report, Restart: func() { rec.restarts++ },
				Run: func(_ context.Context, _ []string, bin string, args ...string) ([]byte, error) {
					if args[0] == "version" {
						return []byte(tc.says + "\ncommit: x\n"), nil
					}
					if tc.checkFails {
						return []byte("agent.yaml:3:1: bad"), os.ErrInvalid
					}
					return []byte("OK"), nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			o := Offer{Version: tc.version, URL: srv.URL, SHA256: sum[:], Hash: []byte{1}, AllHash: []byte{2},
				Signature: Sign(priv, tc.version, sum[:], tc.allowDown)}
			m.Handle(context.Background(), o)
			if got := rec.phases(); got != tc.wantPhases {
				t.Errorf("phases %s, want %s", got, tc.wantPhases)
			}
			if last := rec.reports[len(rec.reports)-1]; !strings.Contains(last.Error, tc.wantErr) {
				t.Errorf("error %q, want %q", last.Error, tc.wantErr)
			}
			if (rec.restarts == 1) != tc.wantRestart {
				t.Errorf("restarts %d", rec.restarts)
			}
			st, err := l.Load()
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantRestart {
				if st.Trial == nil || st.Trial.Version != tc.version || st.Current.Version != "1.0.0" {
					t.Fatalf("state %+v", st)
				}
				if b, _ := os.ReadFile(l.Binary(tc.version)); !bytes.Equal(b, content) {
					t.Error("the staged binary is not the download")
				}
				return
			}
			if st.Trial != nil || st.Last == nil || !st.Last.Failed {
				t.Errorf("state after a refusal %+v", st)
			}
			if _, err := os.Stat(l.Binary(tc.version)); err == nil {
				t.Error("a refused version stays staged")
			}
			// The same offer again is not installed again, only reported.
			n := len(rec.reports)
			m.Handle(context.Background(), o)
			if len(rec.reports) != n+1 || rec.reports[n].Phase != InstallFailed {
				t.Errorf("repeated offer: %+v", rec.reports[n:])
			}
		})
	}
}

// An offer during a trial (the trial itself is offered its own version)
// is not installed nor reported Installed before the verdict.
func TestManagerWaitsForTheTrial(t *testing.T) {
	l := trialLayout(t, 1)
	pub, priv, _ := GenerateKey(nil)
	rec := &recorder{}
	m, err := NewManager(Options{Layout: l, PublicKey: pub, Self: Slot{Version: "1.1.0", Path: l.Binary("1.1.0")},
		Report: rec.report, Restart: func() { rec.restarts++ }})
	if err != nil {
		t.Fatal(err)
	}
	sha := make([]byte, 32)
	m.Handle(context.Background(), Offer{Version: "1.1.0", URL: "http://127.0.0.1:1/x", SHA256: sha, Signature: Sign(priv, "1.1.0", sha, false)})
	if got := rec.phases(); got != "Installing" || rec.restarts != 0 {
		t.Errorf("phases %s restarts %d", got, rec.restarts)
	}
}
