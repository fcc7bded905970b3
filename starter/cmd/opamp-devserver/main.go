// Command opamp-devserver is a stand-in OpAMP server for trying the
// agent's fleet management, as edgesocket-receiver stands in for the
// engine: it lists the agents that connect (description, health, remote
// config status) and offers them an agent.yaml read from a file, offered
// again whenever the file changes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `opamp-devserver: a stand-in OpAMP server (not a fleet manager)

Usage: opamp-devserver [--listen 127.0.0.1:4320] [--push-config agent.yaml] [--poll-ms 1000]
                       [--package FILE --package-version V --package-key KEY [--package-cut-after N]]
                       [--control 127.0.0.1:4321] [--save-dir .]

Agents connect to ws://LISTEN/v1/opamp (management.opamp.endpoint). Every
change is printed as the full listing of agents: instance uid, version,
host, health per component, and the status of the remote config (APPLIED,
or FAILED with the agent's line:column errors). With --push-config the
file is offered to every agent as its agent.yaml, and offered again each
time the file changes (checked every --poll-ms). With --package the
binary FILE is offered as the agent's new version V (self-upgrade:
management.opamp.packages.public-key), served over HTTP on a port of its
own and signed at start with KEY (from edge-agent package keygen);
--package-allow-downgrade signs it as a permitted downgrade, and
--package-cut-after N cuts the first download after N bytes, to watch it
resume.

--control serves a small HTTP API to push the rest ("off" turns it off):
  GET  /agents                      the agents, as JSON
  POST /agents/{uid|any}/tasks/{task}
                                    run an operator task (retry-dead,
                                    purge-dead, backlog, diagnostics,
                                    reread) and print its result; the body,
                                    if any, is the task's JSON args (reread:
                                    {"path","offset","input"}); a
                                    diagnostics bundle is saved in
                                    --save-dir
  POST /connections/edgesocket      {"endpoint","token","cert_file",
                                    "key_file","ca_file"}: new output
                                    connection settings
  POST /connections/opamp           {"endpoint","headers","ca_file",
                                    "cert_file","key_file"}: a new OpAMP
                                    server for the agents
  POST /connections/own_logs        {"endpoint","headers"}: an OTLP/HTTP
                                    logs URL the agents ship their own
                                    logs to ("" withdraws it)
SIGINT or SIGTERM stop it.
Exit codes: 0 stopped by a signal, 1 failure, 64 bad flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("opamp-devserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	listen := fs.String("listen", "127.0.0.1:4320", "host:port to listen on")
	push := fs.String("push-config", "", "agent.yaml to offer to every agent")
	pollMs := fs.Int("poll-ms", 1000, "how often the --push-config file is checked for changes")
	var pkg packageFlags
	pkg.register(fs)
	controlAddr := fs.String("control", "127.0.0.1:4321", `host:port of the control API ("off": none)`)
	saveDir := fs.String("save-dir", ".", "where diagnostics bundles are saved")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 64
	}
	if fs.NArg() > 0 || *pollMs <= 0 {
		fmt.Fprintf(stderr, "opamp-devserver: unexpected arguments %q or --poll-ms %d (must be > 0)\n", fs.Args(), *pollMs)
		return 64
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := opampdev.Start(*listen, log)
	if err != nil {
		fmt.Fprintf(stderr, "opamp-devserver: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "opamp-devserver listening on %s (management.opamp.endpoint: %s)\n", srv.Addr(), srv.Endpoint())
	if err := pkg.offer(srv, stdout); err != nil {
		fmt.Fprintf(stderr, "opamp-devserver: %v\n", err)
		_ = srv.Stop(context.Background())
		return 64
	}
	if *controlAddr != "off" {
		addr, err := serveControl(ctx, *controlAddr, &control{srv: srv, saveDir: *saveDir}, log)
		if err != nil {
			fmt.Fprintf(stderr, "opamp-devserver: %v\n", err)
			_ = srv.Stop(context.Background())
			return 1
		}
		fmt.Fprintf(stdout, "control API on http://%s (GET /agents, POST /agents/any/tasks/diagnostics, POST /connections/edgesocket, POST /connections/opamp, POST /connections/own_logs)\n", addr)
	}

	var pushed time.Time
	var pushedSize int64 = -1
	lastErr := ""
	complain := func(err error) {
		// Once per problem: the file is checked every --poll-ms.
		if msg := err.Error(); msg != lastErr {
			fmt.Fprintf(stderr, "opamp-devserver: --push-config: %v (offered once it can be read)\n", err)
			lastErr = msg
		}
	}
	offer := func() {
		if *push == "" {
			return
		}
		st, err := os.Stat(*push)
		if err != nil {
			complain(err)
			return
		}
		if st.ModTime().Equal(pushed) && st.Size() == pushedSize {
			return
		}
		data, err := os.ReadFile(*push)
		if err != nil {
			complain(err)
			return
		}
		lastErr = ""
		pushed, pushedSize = st.ModTime(), st.Size()
		hash := srv.Push(data)
		fmt.Fprintf(stdout, "offering %s to every agent (config hash %x)\n", *push, hash[:6])
	}
	offer()
	poll := time.NewTicker(time.Duration(*pollMs) * time.Millisecond)
	defer poll.Stop()
	last := ""
	for {
		changed := srv.Changed()
		if text := listing(srv.Agents()); text != last {
			fmt.Fprint(stdout, text)
			last = text
		}
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Stop(shut); err != nil {
				fmt.Fprintf(stderr, "opamp-devserver: stop: %v\n", err)
				return 1
			}
			return 0
		case <-changed:
		case <-poll.C:
			offer()
		}
	}
}

// listing renders every agent; heartbeat counts are left out so that a
// quiet fleet prints nothing new.
func listing(agents []opampdev.Agent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %d agent(s)\n", len(agents))
	for _, a := range agents {
		conn := "disconnected"
		if a.Connected {
			conn = "connected"
		}
		id, ni := a.Identifying, a.NonIdentifying
		fmt.Fprintf(&b, "%s  %s %s  %s  host %s (%s/%s)  agent id %s\n", a.InstanceUID, id["service.name"], id["service.version"], conn,
			ni["host.name"], ni["os.type"], ni["host.arch"], ni["edge_agent.agent_id"])
		fmt.Fprintf(&b, "    input %s -> output %s\n", ni["edge_agent.input.paths"], ni["edge_agent.output.endpoint"])
		if h := a.Health; h != nil {
			fmt.Fprintf(&b, "    health: %s", a.Healthy())
			if h.GetLastError() != "" {
				fmt.Fprintf(&b, " (%s)", h.GetLastError())
			}
			names := make([]string, 0, len(h.GetComponentHealthMap()))
			for name := range h.GetComponentHealthMap() {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				c := h.GetComponentHealthMap()[name]
				state := "ok"
				if !c.GetHealthy() {
					state = "FAIL"
				}
				fmt.Fprintf(&b, "; %s %s %s", name, state, c.GetStatus())
			}
			b.WriteString("\n")
		}
		writePackage(&b, a)
		if cs := a.Connections; cs != nil {
			fmt.Fprintf(&b, "    connection settings: %s (hash %x)", a.ConnectionStatus(), shortHash(cs.GetLastConnectionSettingsHash()))
			if cs.GetErrorMessage() != "" {
				fmt.Fprintf(&b, ": %s", cs.GetErrorMessage())
			}
			b.WriteString("\n")
		}
		if rs := a.RemoteConfig; rs != nil {
			fmt.Fprintf(&b, "    remote config: %s", a.RemoteStatus())
			if h := rs.GetLastRemoteConfigHash(); len(h) > 0 {
				fmt.Fprintf(&b, " (hash %x)", shortHash(h))
			}
			b.WriteString("\n")
			for _, line := range strings.Split(rs.GetErrorMessage(), "\n") {
				if line != "" {
					fmt.Fprintf(&b, "      %s\n", line)
				}
			}
		}
	}
	return b.String()
}

func shortHash(h []byte) []byte {
	if len(h) > 6 {
		return h[:6]
	}
	return h
}
