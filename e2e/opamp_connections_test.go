//go:build unix

package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// edgesocket connection settings from the server: a wrong token for a
// second engine is refused within the deadline and rolled back (the first
// engine goes on receiving); the right one moves the output there, is
// reported APPLIED, and is kept across a restart.
func TestOpAMPEdgeSocketConnectionSettings(t *testing.T) {
	skipShort(t)
	first := startReceiver(t, "first-token-0123456789")
	second := startReceiver(t, "second-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: first.port, token: "first-token-0123456789", extra: managed(srv.Endpoint())})
	agent := root.startReady()
	uid := root.instanceUID()
	in := root.createFile("in/a.log")
	batch := func(n int) []string {
		lines := makeLines(t.Name()+"-"+strconv.Itoa(n), 0, 50)
		in.lines(lines)
		return lines
	}
	// waitDelivered wants everything a receiver got.
	toFirst := batch(0)
	first.waitDelivered(toFirst, deliverTimeout)
	waitAgent(t, srv, uid, "AcceptsOtherConnectionSettings", func(a opampdev.Agent) bool {
		return a.Capabilities&(1<<13) != 0 // AcceptsOtherConnectionSettings
	})

	secondAddr := "127.0.0.1:" + strconv.Itoa(second.port)
	bad := srv.OfferEdgeSocket(opampdev.EdgeSocket{Endpoint: secondAddr, Token: "wrong-token-0123456789"})
	got := waitAgent(t, srv, uid, "the wrong token FAILED", func(a opampdev.Agent) bool {
		return a.ConnectionStatus() == "FAILED" && string(a.Connections.GetLastConnectionSettingsHash()) == string(bad)
	})
	if msg := got.Connections.GetErrorMessage(); !strings.Contains(msg, "rolled back") || !strings.Contains(msg, "AUTH_FAILED") {
		t.Errorf("FAILED with %q", msg)
	}
	if strings.Contains(got.Connections.GetErrorMessage(), "wrong-token") {
		t.Errorf("the error shows the token: %q", got.Connections.GetErrorMessage())
	}
	toFirst = append(toFirst, batch(1)...)
	first.waitDelivered(toFirst, deliverTimeout)

	good := srv.OfferEdgeSocket(opampdev.EdgeSocket{Endpoint: secondAddr, Token: "second-token-0123456789"})
	waitAgent(t, srv, uid, "the right token APPLIED", func(a opampdev.Agent) bool {
		return a.ConnectionStatus() == "APPLIED" && string(a.Connections.GetLastConnectionSettingsHash()) == string(good)
	})
	toSecond := batch(2)
	second.waitDelivered(toSecond, deliverTimeout)
	waitAgent(t, srv, uid, "the description names the new endpoint", func(a opampdev.Agent) bool {
		return a.NonIdentifying["edge_agent.output.endpoint"] == secondAddr
	})
	a := waitAgent(t, srv, uid, "the effective config says so", func(a opampdev.Agent) bool {
		return strings.Contains(a.EffectiveConfig, "edgesocket connection settings")
	})
	if strings.Contains(a.EffectiveConfig, "second-token") {
		t.Errorf("effective config shows the token:\n%s", a.EffectiveConfig)
	}
	saved := readText(root.path("edge-agent.connections/edgesocket.json"))
	if !strings.Contains(saved, secondAddr) {
		t.Fatalf("saved settings %q", saved)
	}
	if st, err := os.Stat(root.path("edge-agent.connections/edgesocket.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("saved settings file: %v %v", st, err)
	}

	// Kept across a restart: the local file still names the first engine.
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	agent = root.startReady()
	defer root.stop(agent)
	second.waitDelivered(append(toSecond, batch(3)...), deliverTimeout)
	if got := len(first.received()); got != len(toFirst) {
		t.Errorf("the first engine got %d lines, want %d (none after the switch)", got, len(toFirst))
	}
}

// OpAMP connection settings: offered a second server, the agent connects
// there beside the first, then leaves the first and reports APPLIED; a
// bad endpoint offered by the second is FAILED and the agent stays; the
// new server is kept across a restart.
func TestOpAMPConnectionSettings(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	first := startOpAMP(t, "127.0.0.1:0")
	second := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: rc.port, extra: managed(first.Endpoint())})
	agent := root.startReady()
	uid := root.instanceUID()
	waitAgent(t, first, uid, "AcceptsOpAMPConnectionSettings", func(a opampdev.Agent) bool {
		return a.Connected && a.Capabilities&(1<<8) != 0 // AcceptsOpAMPConnectionSettings
	})

	hash := first.OfferOpAMP(second.Endpoint(), map[string]string{"X-Fleet": "second"}, nil, nil, nil)
	waitAgent(t, second, uid, "connected to the second server, settings APPLIED", func(a opampdev.Agent) bool {
		return a.Connected && a.ConnectionStatus() == "APPLIED" && string(a.Connections.GetLastConnectionSettingsHash()) == string(hash)
	})
	waitAgent(t, first, uid, "gone from the first server", func(a opampdev.Agent) bool { return !a.Connected })
	if saved := readText(root.path("edge-agent.connections/opamp.json")); !strings.Contains(saved, second.Endpoint()) {
		t.Fatalf("saved OpAMP settings %q", saved)
	}

	bad := second.OfferOpAMP("ws://127.0.0.1:"+strconv.Itoa(deadPort(t))+"/v1/opamp", nil, nil, nil, nil)
	got := waitAgent(t, second, uid, "the bad endpoint FAILED", func(a opampdev.Agent) bool {
		return a.ConnectionStatus() == "FAILED" && string(a.Connections.GetLastConnectionSettingsHash()) == string(bad)
	})
	if msg := got.Connections.GetErrorMessage(); !strings.Contains(msg, "kept the connection in force") || !strings.Contains(msg, "connection refused") {
		t.Errorf("FAILED with %q", got.Connections.GetErrorMessage())
	}
	n := got.Messages
	waitAgent(t, second, uid, "still reporting to the second server", func(a opampdev.Agent) bool { return a.Connected && a.Messages >= n+3 })

	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	agent = root.startReady()
	defer root.stop(agent)
	waitAgent(t, second, uid, "back on the second server after a restart", func(a opampdev.Agent) bool { return a.Connected })
}

// An edgesocket endpoint nobody answers on is given up after the
// deadline (15 s) and the output goes back to the engine it had.
func TestOpAMPEdgeSocketUnreachableRolledBack(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: rc.port, extra: managed(srv.Endpoint())})
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()
	waitAgent(t, srv, uid, "AcceptsOtherConnectionSettings", func(a opampdev.Agent) bool {
		return a.Capabilities&(1<<13) != 0
	})
	dead := "127.0.0.1:" + strconv.Itoa(deadPort(t))
	hash := srv.OfferEdgeSocket(opampdev.EdgeSocket{Endpoint: dead, Token: "e2e-token-0123456789"})
	got := waitAgent(t, srv, uid, "the unreachable endpoint FAILED", func(a opampdev.Agent) bool {
		return a.ConnectionStatus() == "FAILED" && string(a.Connections.GetLastConnectionSettingsHash()) == string(hash)
	})
	if msg := got.Connections.GetErrorMessage(); !strings.Contains(msg, "not reached within 15s") {
		t.Errorf("FAILED with %q", msg)
	}
	want := makeLines(t.Name(), 0, 40)
	root.createFile("in/a.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)
	if _, err := os.Stat(root.path("edge-agent.connections/edgesocket.json")); !os.IsNotExist(err) {
		t.Errorf("refused settings were saved: %v", err)
	}
}
