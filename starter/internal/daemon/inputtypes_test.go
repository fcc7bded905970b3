package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const modulePrefix = "github.com/edge-agent/edge-agent/"

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList runs `go list -json` over patterns from the test's
// directory (the workspace resolves the other modules).
func goList(t *testing.T, patterns ...string) []listed {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go tool is needed to read the import graph: %v", err)
	}
	cmd := exec.Command("go", append([]string{"list", "-json"}, patterns...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, errOut.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(&out)
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs
		}
		if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// inputTypes are the packages of the connector module that implement an
// input type: outside connector/internal, importing connector/input. A
// new type is found without editing this test.
func inputTypes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range goList(t, modulePrefix+"connector/...") {
		if strings.Contains(p.ImportPath, "/internal/") || p.ImportPath == modulePrefix+"connector/input" {
			continue
		}
		if slices.Contains(p.Imports, modulePrefix+"connector/input") {
			out = append(out, p.ImportPath)
		}
	}
	if len(out) < 4 {
		t.Fatalf("found only %d input types (%v): the test no longer finds them", len(out), out)
	}
	return out
}

// The agent's status, metrics and views render what inputs describe of
// themselves: only the daemon, which registers the types, imports an
// input type's package, and no package of the agent but the daemon and
// the commands above it (cli, cmd/edge-agent) depends on one at all.
func TestOnlyTheDaemonKnowsInputTypes(t *testing.T) {
	types := inputTypes(t)
	daemon := modulePrefix + "starter/internal/daemon"
	above := []string{daemon, modulePrefix + "starter/internal/cli", modulePrefix + "starter/cmd/edge-agent"}
	for _, p := range goList(t, modulePrefix+"starter/...") {
		if p.ImportPath == daemon {
			continue
		}
		for _, typ := range types {
			if slices.Contains(p.Imports, typ) {
				t.Errorf("%s imports the input type %s: render its Description instead", p.ImportPath, typ)
			}
			if !slices.Contains(above, p.ImportPath) && slices.Contains(p.Deps, typ) {
				t.Errorf("%s depends on the input type %s", p.ImportPath, typ)
			}
		}
	}
}
