package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// userCommands are the commands an operator types most; a completion script
// or man page without one of them is one the operator cannot trust.
var userCommands = []string{"start", "stop", "status", "reload", "version", "db", "check", "config", "completion", "man"}

func TestCompletionScriptsNameEveryCommand(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			e := newTestEnv(t)
			if code := e.run("completion", shell); code != 0 {
				t.Fatalf("exit %d, stderr: %s", code, e.stderr.String())
			}
			out := e.stdout.String()
			if strings.TrimSpace(out) == "" {
				t.Fatal("empty completion script")
			}
			for _, cmd := range userCommands {
				if !strings.Contains(out, cmd) {
					t.Errorf("%s completion does not name %q:\n%s", shell, cmd, out)
				}
			}
		})
	}
}

func TestCompletionUnknownShellIsUsage(t *testing.T) {
	e := newTestEnv(t)
	if code := e.run("completion", "tcsh"); code != exitcode.Usage {
		t.Fatalf("exit %d, want %d (usage); stderr: %s", code, exitcode.Usage, e.stderr.String())
	}
}

// TestBashCompletionCompletes sources the bash script into a real bash and
// asks it what it would offer, as bash does on TAB: a script that parses
// but offers nothing, or the wrong level's words, fails here.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	e := newTestEnv(t)
	if code := e.run("completion", "bash"); code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, e.stderr.String())
	}
	script := filepath.Join(t.TempDir(), "edge-agent.bash")
	if err := os.WriteFile(script, e.stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}

	// complete asks the script's function for the words offered after
	// line, the last word of which is being typed ("" for a fresh word).
	complete := func(line ...string) []string {
		t.Helper()
		prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); ` +
			`fn=$(complete -p edge-agent | sed -E 's/.* -F ([^ ]+) .*/\1/'); "$fn"; printf '%s\n' "${COMPREPLY[@]}"`
		args := append([]string{"-c", prog, "bash", script}, line...)
		out, err := exec.CommandContext(ctx, bash, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", line, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		line    []string
		want    []string
		notWant []string
	}{
		{[]string{"edge-agent", ""}, []string{"start", "stop", "status", "reload", "db", "check", "config", "completion", "man"}, []string{"output", "wal-summary"}},
		{[]string{"edge-agent", "con"}, []string{"config"}, []string{"check", "start"}},
		{[]string{"edge-agent", "config", ""}, []string{"check"}, []string{"start"}},
		{[]string{"edge-agent", "check", ""}, []string{"output"}, []string{"start"}},
		{[]string{"edge-agent", "db", ""}, []string{"wal-summary", "info", "salvage"}, []string{"start"}},
		{[]string{"edge-agent", "start", "--"}, []string{"--config", "--background", "--log-level"}, []string{"--notify-fd", "--json"}},
		{[]string{"edge-agent", "--config", "x.yaml", "status", "--"}, []string{"--json"}, []string{"--background"}},
		{[]string{"edge-agent", "completion", ""}, []string{"bash", "zsh", "fish"}, nil},
		// A flag that takes a file offers no words, so bash falls back to
		// file names (complete -o default).
		{[]string{"edge-agent", "start", "--config", ""}, nil, []string{"--background", "start"}},
	} {
		got := complete(tc.line...)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q offers %q, lacks %q", tc.line, got, w)
			}
		}
		for _, w := range tc.notWant {
			if slices.Contains(got, w) {
				t.Errorf("%q offers %q, which it must not (%q)", tc.line, got, w)
			}
		}
	}
}

func TestManPageHasNameAndEveryCommand(t *testing.T) {
	e := newTestEnv(t)
	if code := e.run("man"); code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, e.stderr.String())
	}
	out := e.stdout.String()
	// The examples keep their columns: a code block, not a paragraph.
	for _, want := range []string{".TH ", ".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".EX\nedge-agent start "} {
		if !strings.Contains(out, want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	for _, cmd := range userCommands {
		if !strings.Contains(out, ".SH "+cmd) && !strings.Contains(out, ".SS "+cmd) {
			t.Errorf("man page has no section for %q", cmd)
		}
	}
}

// The script must not depend on which command printed it: urfave/cli adds
// help subcommands only to the commands it set up for the current run.
func TestZshCompletionCarriesTheBashScript(t *testing.T) {
	e := newTestEnv(t)
	if code := e.run("completion", "bash"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	bash := e.stdout.String()
	if code := e.run("completion", "zsh"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	zsh := e.stdout.String()
	if !strings.Contains(zsh, "bashcompinit") || !strings.HasSuffix(zsh, bash) {
		t.Fatalf("zsh script is not bashcompinit plus the bash script:\n%s", zsh)
	}
}
