//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// opampWait bounds every wait for what the OpAMP server sees.
const opampWait = 30 * time.Second

// startOpAMP runs the in-process OpAMP server on addr ("127.0.0.1:0" for
// any port) until the test ends.
func startOpAMP(t *testing.T, addr string) *opampdev.Server {
	t.Helper()
	srv, err := opampdev.Start(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopOpAMP(t, srv) })
	return srv
}

// startOpAMPAt runs the in-process OpAMP server on an address fixed in
// advance (released by holdPort just before): a bind that fails because
// another socket took the port in between is retried, bounded.
func startOpAMPAt(t *testing.T, addr string) *opampdev.Server {
	t.Helper()
	var srv *opampdev.Server
	var err error
	eventually(t, 10*time.Second, "the OpAMP server bound to "+addr, func() bool {
		srv, err = opampdev.Start(addr, nil)
		return err == nil || !strings.Contains(err.Error(), "address already in use")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopOpAMP(t, srv) })
	return srv
}

func stopOpAMP(t *testing.T, srv *opampdev.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Logf("stop the OpAMP server: %v", err)
	}
}

// managed is the management section pointing at endpoint with a short
// heartbeat, appended to the generated agent.yaml.
func managed(endpoint string) string {
	return fmt.Sprintf("management:\n  opamp:\n    endpoint: %s\n    heartbeat-interval-ms: 100\n", endpoint)
}

// instanceUID is the agent's, from its file.
func (r *agentRoot) instanceUID() string {
	return strings.TrimSpace(readText(r.path("edge-agent.instance-uid")))
}

// waitAgent waits until the server holds a record of uid for which cond
// holds, and returns it.
func waitAgent(t *testing.T, srv *opampdev.Server, uid, what string, cond func(opampdev.Agent) bool) opampdev.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opampWait)
	defer cancel()
	var got opampdev.Agent
	err := srv.Wait(ctx, func(as []opampdev.Agent) bool {
		for _, a := range as {
			if a.InstanceUID == uid && cond(a) {
				got = a
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("%s: %v\nthe server knows: %+v", what, err, srv.Agents())
	}
	return got
}

// Registration with the expected description, heartbeats on the
// configured interval, the instance uid in status and /debug/status, the
// effective config redacted.
func TestOpAMPRegistration(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: port, api: true, extra: managed(srv.Endpoint())})
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()
	if len(uid) != 36 {
		t.Fatalf("instance uid file holds %q", uid)
	}
	a := waitAgent(t, srv, uid, "registered with a description and an effective config", func(a opampdev.Agent) bool {
		return a.Identifying != nil && a.EffectiveConfig != "" && a.Health != nil
	})
	if a.Identifying["service.name"] != "edge-agent" || a.Identifying["service.instance.id"] != uid || a.Identifying["service.version"] == "" {
		t.Errorf("identifying attributes %v", a.Identifying)
	}
	if got := a.NonIdentifying["edge_agent.input.paths"]; got != root.path("in/*.log") {
		t.Errorf("input paths %q", got)
	}
	if got := a.NonIdentifying["edge_agent.output.endpoint"]; got != "127.0.0.1:"+strconv.Itoa(port) {
		t.Errorf("output endpoint %q", got)
	}
	for _, k := range []string{"host.name", "os.type", "host.arch", "edge_agent.agent_id"} {
		if a.NonIdentifying[k] == "" {
			t.Errorf("no %s in %v", k, a.NonIdentifying)
		}
	}
	if strings.Contains(a.EffectiveConfig, "e2e-token-0123456789") || !strings.Contains(a.EffectiveConfig, "<redacted>") {
		t.Errorf("effective config not redacted:\n%s", a.EffectiveConfig)
	}
	// Heartbeats keep arriving while nothing changes.
	n := a.Messages
	waitAgent(t, srv, uid, "five more heartbeats", func(a opampdev.Agent) bool { return a.Messages >= n+5 })

	stdout, stderr, code := root.cli("status", "--json")
	if code != 0 {
		t.Fatalf("status exit %d: %s", code, stderr)
	}
	var st struct {
		Management struct {
			InstanceUID  string `json:"instance_uid"`
			ConfigSource string `json:"config_source"`
			Connected    *bool  `json:"opamp_connected"`
		} `json:"management"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Management.InstanceUID != uid || st.Management.ConfigSource != "local" || st.Management.Connected == nil || !*st.Management.Connected {
		t.Errorf("status management %+v", st.Management)
	}
	want := makeLines(t.Name(), 0, 50)
	root.createFile("in/a.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)
}

// The receiver refuses the token: the server sees the agent unhealthy;
// a remote config with the right token and a new path makes it healthy,
// ships the new file and every line held meanwhile, and is APPLIED; an
// invalid one is FAILED with its line:column and the running config keeps
// shipping.
func TestOpAMPRemoteConfig(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "right-token-0123456789")
	port := rc.port
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: port, token: "wrong-token-0123456789", paths: []string{"in/a.log"}, extra: managed(srv.Endpoint())})
	wantA := makeLines(t.Name()+"-a", 0, 300)
	wantB := makeLines(t.Name()+"-b", 0, 200)
	a := root.createFile("in/a.log")
	b := root.createFile("in/b.log")
	a.lines(wantA)
	b.lines(wantB)
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()

	got := waitAgent(t, srv, uid, "unhealthy: the engine refuses the token", func(a opampdev.Agent) bool { return a.Healthy() == "unhealthy" })
	if out := got.Health.GetComponentHealthMap()["output"]; out.GetHealthy() || !strings.Contains(out.GetLastError(), "AUTH_FAILED") {
		t.Errorf("output health %v", out)
	}

	// The fleet's config: right token, and b.log too.
	fixed := *root
	fixed.opts.token = "right-token-0123456789"
	fixed.opts.paths = []string{"in/*.log"}
	fixed.opts.extra = ""
	hash := srv.Push([]byte(fixed.configText()))
	waitAgent(t, srv, uid, "APPLIED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && string(a.RemoteConfig.GetLastRemoteConfigHash()) == string(hash)
	})
	all := append(append([]string{}, wantA...), wantB...)
	if d := rc.waitDelivered(all, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the remote config: %s", d)
	}
	waitAgent(t, srv, uid, "healthy again", func(a opampdev.Agent) bool { return a.Healthy() == "healthy" })

	// Invalid: FAILED with the problem and its position; nothing changes.
	bad := srv.Push([]byte(fixed.configText() + "  no-such-key: 1\n"))
	got = waitAgent(t, srv, uid, "FAILED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "FAILED" && string(a.RemoteConfig.GetLastRemoteConfigHash()) == string(bad)
	})
	if msg := got.RemoteConfig.GetErrorMessage(); !strings.Contains(msg, "remote agent.yaml:") || !strings.Contains(msg, "log.no-such-key: unknown key") {
		t.Errorf("FAILED message %q", msg)
	}
	more := makeLines(t.Name()+"-b", 200, 100)
	b.lines(more)
	if d := rc.waitDelivered(append(all, more...), deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the refused config: %s", d)
	}
	if !agent.running() {
		t.Fatal("the refused config stopped the agent")
	}
}

// The server is down at start and for a while: the agent ships as usual,
// and registers once the server listens. Restarted while the server is
// down again, it keeps the remote config it last applied.
func TestOpAMPServerDown(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	opamp := holdPort(t)
	opampAddr := "127.0.0.1:" + strconv.Itoa(opamp.port)
	root := newRoot(t, options{port: rc.port, paths: []string{"in/a.log"}, extra: managed("ws://" + opampAddr + opampdev.Path)})
	a := root.createFile("in/a.log")
	wantA := makeLines(t.Name()+"-a", 0, 200)
	a.lines(wantA)
	agent := root.startReady()
	rc.waitDelivered(wantA, deliverTimeout)
	eventually(t, 20*time.Second, "the agent retrying the OpAMP server", func() bool {
		return strings.Contains(root.logText(), "OpAMP server unreachable")
	})

	opamp.release()
	srv := startOpAMPAt(t, opampAddr)
	uid := root.instanceUID()
	waitAgent(t, srv, uid, "registered once the server came up", func(a opampdev.Agent) bool { return a.Connected && a.Identifying != nil })

	// A remote config that reads b.log only.
	remote := *root
	remote.opts.paths = []string{"in/b.log"}
	remote.opts.extra = ""
	hash := srv.Push([]byte(remote.configText()))
	waitAgent(t, srv, uid, "APPLIED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && string(a.RemoteConfig.GetLastRemoteConfigHash()) == string(hash)
	})
	stopOpAMP(t, srv)
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}

	// The server stays down; the restarted agent runs the fleet's config.
	before := root.readyLines()
	agent = root.start()
	defer func() { root.stop(agent) }() // the last one started
	root.waitReady(agent, before)
	if !strings.Contains(root.logText(), `"msg":"config in effect","config_source":"remote"`) {
		t.Fatalf("the restarted agent does not say the remote config is in effect:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
	wantB := makeLines(t.Name()+"-b", 0, 100)
	b := root.createFile("in/b.log")
	b.lines(wantB)
	all := append(append([]string{}, wantA...), wantB...)
	if d := rc.waitDelivered(all, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the restart: %s", d)
	}

	// A SIGHUP re-reads the local file but keeps the remote config.
	agent.signal(t, syscall.SIGHUP)
	eventually(t, 10*time.Second, "the reload keeping the remote config", func() bool {
		return regexp.MustCompile(`"msg":"config reloaded",.*"config_source":"remote"`).MatchString(root.logText())
	})
	more := makeLines(t.Name()+"-b", 100, 50)
	b.lines(more)
	all = append(all, more...)
	if d := rc.waitDelivered(all, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the SIGHUP: %s", d)
	}

	// A saved config that cannot be read: the local file, said at ERROR.
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	if err := os.WriteFile(root.path("edge-agent.remote-config.json"), []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	before = root.readyLines()
	agent = root.start()
	root.waitReady(agent, before)
	text := root.logText()
	if !strings.Contains(text, "the saved remote config cannot be read; starting from the local file") ||
		!strings.Contains(text, `"msg":"config in effect","config_source":"local"`) {
		t.Fatalf("no fallback to the local file logged:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
}

// The restart command: a graceful stop and the same command again (same
// pid), nothing lost.
func TestOpAMPRestartCommand(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: port, extra: managed(srv.Endpoint())})
	a := root.createFile("in/a.log")
	want := makeLines(t.Name(), 0, 2000)
	a.lines(want[:1000])
	agent := root.startReady() // stopped below; startProc's cleanup kills it if the test fails first
	uid := root.instanceUID()
	waitAgent(t, srv, uid, "registered with the restart capability", func(a opampdev.Agent) bool {
		return a.Connected && a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_AcceptsRestartCommand != 0
	})
	before := root.readyLines()
	if err := srv.Restart(uid); err != nil {
		t.Fatal(err)
	}
	a.lines(want[1000:1500])
	root.waitReady(agent, before)
	if !strings.Contains(root.logText(), "restarting: the same binary and arguments start again") {
		t.Fatal("no restart line in the log")
	}
	a.lines(want[1500:])
	waitAgent(t, srv, uid, "registered again after the restart", func(a opampdev.Agent) bool { return a.Connected })
	// Nothing is lost, nothing sent twice: as a SIGTERM, the restart's
	// stop waits for the replies to the batches in flight, and this
	// engine answers at once, well within agent.shutdown-timeout-ms.
	d := rc.waitDelivered(want, deliverTimeout)
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop after the restart: exit %d", code)
	}
	if d.duplicates != 0 {
		t.Errorf("after the restart: %s; the restart's stop released rows the engine had received", d)
	}
	if strings.Contains(root.logText(), `"level":"ERROR"`) {
		t.Errorf("errors logged:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
}
