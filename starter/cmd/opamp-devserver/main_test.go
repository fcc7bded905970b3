package main

import (
	"io"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--poll-ms", "0"}, {"extra"}, {"--no-such-flag"},
		{"--listen", "127.0.0.1:0", "--package-version", "1.0.0"},
		{"--listen", "127.0.0.1:0", "--package", "main.go", "--package-version", "x", "--package-key", "k"},
		{"--listen", "127.0.0.1:0", "--package", "main.go", "--package-version", "1.0.0", "--package-key", "no-such-key"}} {
		if code := run(args, io.Discard, io.Discard); code != 64 {
			t.Errorf("%q: exit %d, want 64", args, code)
		}
	}
}

// The listing shows what an operator trying the agent looks for: who,
// health per component, and a refused config with its positions.
func TestListing(t *testing.T) {
	got := listing([]opampdev.Agent{{
		InstanceUID: "01932c07-a5a4-7b4e-8f3e-2b9d6a1c0e55", Connected: true,
		Identifying:    map[string]string{"service.name": "edge-agent", "service.version": "1.2.3"},
		NonIdentifying: map[string]string{"host.name": "edge-7", "edge_agent.input.paths": "/var/log/*.log"},
		Health: &protobufs.ComponentHealth{Healthy: false, LastError: "engine refused the agent (auth_failed)",
			ComponentHealthMap: map[string]*protobufs.ComponentHealth{"output": {Healthy: false, Status: "auth_failed"}, "wal": {Healthy: true, Status: "writable"}}},
		Packages: &protobufs.PackageStatuses{Packages: map[string]*protobufs.PackageStatus{"": {AgentHasVersion: "1.2.3",
			ServerOfferedVersion: "1.3.0", Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, ErrorMessage: "package signature does not verify"}}},
		RemoteConfig: &protobufs.RemoteConfigStatus{Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, LastRemoteConfigHash: []byte{1, 2, 3},
			ErrorMessage: "remote agent.yaml:8:3: retry.max-attempts: must be > 0, got -1\nremote agent.yaml:9:1: x"},
	}})
	for _, want := range []string{"--- 1 agent(s)", "01932c07-a5a4-7b4e-8f3e-2b9d6a1c0e55  edge-agent 1.2.3  connected  host edge-7",
		"input /var/log/*.log", "health: unhealthy (engine refused the agent (auth_failed)); output FAIL auth_failed; wal ok writable",
		"remote config: FAILED (hash 010203)", "package: InstallFailed (has 1.2.3, offered 1.3.0): package signature does not verify", "      remote agent.yaml:8:3: retry.max-attempts: must be > 0, got -1\n      remote agent.yaml:9:1: x"} {
		if !strings.Contains(got, want) {
			t.Errorf("listing lacks %q:\n%s", want, got)
		}
	}
}
