package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

// examplePath is the documented example shipped in the tarball.
const examplePath = "../../../config/agent.yaml"

// shippedExample is the example as this platform's release ships it: on
// 32-bit builds the release writes queue.max-bytes as 512 MiB, their
// default and limit (dist's targetConfig), since the agent refuses 1 GiB
// there.
func shippedExample(t *testing.T) string {
	t.Helper()
	if strconv.IntSize == 64 {
		return examplePath
	}
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	const old, new = "\n  max-bytes: 1073741824\n", "\n  max-bytes: 536870912\n"
	if strings.Count(string(data), old) != 1 {
		t.Fatalf("%s lacks %q, which the 32-bit release rewrites", examplePath, old)
	}
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExampleConfigLoads: the shipped example must pass Load as is.
func TestExampleConfigLoads(t *testing.T) {
	example := shippedExample(t)
	cfg, warns, err := Load(example, LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get})
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if len(warns) != 0 {
		t.Errorf("example config warns: %v", warns)
	}
	if transportOf(t, cfg).Client.Token != "change-me" {
		t.Errorf("token default from ${EDGE_AGENT_TOKEN:-change-me}: got another value")
	}

	cfg, _, err = Load(example, LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{"EDGE_AGENT_TOKEN": "from-env"}.get})
	if err != nil {
		t.Fatal(err)
	}
	if transportOf(t, cfg).Client.Token != "from-env" {
		t.Errorf("token not taken from EDGE_AGENT_TOKEN")
	}
}

// TestExampleConfigShowsDefaults: every key is in the example, with its
// default, except the few a real deployment must set.
func TestExampleConfigShowsDefaults(t *testing.T) {
	cfg, _, err := Load(shippedExample(t), LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get})
	if err != nil {
		t.Fatal(err)
	}
	want := NewDefaultConfig()
	wantOut := output.NewTransportConfig()
	wantOut.Client.Endpoint = "127.0.0.1:9999"
	wantOut.Client.Token = "change-me"
	want.Output.Type, want.Output.Options = output.TypeTransport, wantOut
	if !reflect.DeepEqual(cfg.Agent, want.Agent) || !reflect.DeepEqual(cfg.Queue, want.Queue) ||
		!reflect.DeepEqual(cfg.Retry, want.Retry) || !reflect.DeepEqual(cfg.Output, want.Output) ||
		!reflect.DeepEqual(cfg.Log, want.Log) || !reflect.DeepEqual(cfg.HTTP, want.HTTP) {
		t.Errorf("example values differ from the defaults:\n%+v\nwant\n%+v", cfg, want)
	}
	wantIn := file.NewDefaultConfig()
	wantIn.Paths = []string{"/var/log/app/*.log"}
	wantIn.Exclude = []string{}
	wantIn.Fields = map[string]string{}
	wantIn.IncludeLines, wantIn.ExcludeLines = []string{}, []string{}
	if got := fileInput(t, cfg); !reflect.DeepEqual(got, wantIn) {
		t.Errorf("example input differs from the defaults:\n%+v\nwant\n%+v", got, wantIn)
	}

	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	collectKeys(f.Docs[0].Body, "", written)
	all := knownKeys(testRegistry(), testOutputs())
	for _, k := range all {
		if !written[k] {
			t.Errorf("example config lacks %s", k)
		}
	}
	for k := range written {
		if !slices.Contains(all, k) && k != "input" {
			t.Errorf("example config has %s, which is no key", k)
		}
	}
}

func collectKeys(n ast.Node, prefix string, into map[string]bool) {
	kvs, ok := entries(n)
	if !ok {
		return
	}
	for _, kv := range kvs {
		k := join(prefix, keyName(kv.Key))
		into[k] = true
		collectKeys(kv.Value, k, into)
	}
}
