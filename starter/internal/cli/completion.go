package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

func (a *agentCLI) completionCommand() *ucli.Command {
	shell := func(name, usage, example string, write func(io.Writer, []completionNode) error) *ucli.Command {
		return &ucli.Command{
			Name:        name,
			Usage:       usage,
			UsageText:   "edge-agent completion " + name,
			Description: "Examples:\n   " + example,
			Action: func(*ucli.Context) error {
				if err := write(a.env.Stdout, completionTree(a.app())); err != nil {
					return fmt.Errorf("write the %s completion script: %w", name, err)
				}
				return nil
			},
		}
	}
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		UsageText: "edge-agent completion bash|zsh|fish",
		Description: `The script is generated from the commands and flags of this binary, so
it completes exactly what this version accepts.

Examples:
   source <(edge-agent completion bash)           this bash session
   edge-agent completion bash > /etc/bash_completion.d/edge-agent
   source <(edge-agent completion zsh)            in ~/.zshrc, after compinit
   edge-agent completion fish > ~/.config/fish/completions/edge-agent.fish`,
		Subcommands: []*ucli.Command{
			shell("bash", "print the bash completion script",
				"edge-agent completion bash > /etc/bash_completion.d/edge-agent", writeBashCompletion),
			shell("zsh", "print the zsh completion script (through zsh's bashcompinit)",
				"source <(edge-agent completion zsh)   # in ~/.zshrc, after compinit", writeZshCompletion),
			shell("fish", "print the fish completion script",
				"edge-agent completion fish > ~/.config/fish/completions/edge-agent.fish", writeFishCompletion),
		},
	}
}

func (a *agentCLI) manCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "man",
		Usage:     "print the manual page (roff, section 8)",
		UsageText: "edge-agent man",
		Description: `Generated from the commands and flags of this binary.

Examples:
   edge-agent man | man -l -
   edge-agent man > /usr/local/share/man/man8/edge-agent.8`,
		Action: func(*ucli.Context) error {
			// A fresh app, for the reason completionTree gives.
			app := a.app()
			app.Description = manExamples(app.Description)
			page, err := app.ToManWithSection(8)
			if err != nil {
				return fmt.Errorf("generate the man page: %w", err)
			}
			_, err = io.WriteString(a.env.Stdout, page)
			return err
		},
	}
}

// manExamples turns the help text's example lines (indented three spaces,
// right after "Examples:") into a markdown code block: left as they are,
// the man page renderer joins them into one paragraph and loses the
// columns that pair each command with what it does.
func manExamples(s string) string {
	var b strings.Builder
	inBlock := false
	for line := range strings.Lines(s) {
		indented := strings.HasPrefix(line, "   ")
		if indented && !inBlock {
			b.WriteString("\n")
		}
		inBlock = indented
		if indented {
			b.WriteString(" ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// completionNode is one command path ("", "config", "config check") with
// what may follow it there.
type completionNode struct {
	path       string
	commands   []*ucli.Command
	flags      []ucli.Flag
	words      []string // command names, aliases and flag spellings
	valueFlags []string // flag spellings that consume the next word
	children   []string // command names and aliases
}

// completionTree walks the command tree of a freshly built app, not the
// running one: urfave/cli adds "help" subcommands (one shared value) to
// the commands it sets up for a run, so the running tree depends on which
// command is running and can even reach a help command holding itself.
// Hidden commands and flags (start's --notify-fd) are never offered.
func completionTree(app *ucli.App) []completionNode {
	var nodes []completionNode
	var walk func(path string, flags []ucli.Flag, cmds []*ucli.Command)
	walk = func(path string, flags []ucli.Flag, cmds []*ucli.Command) {
		n := completionNode{path: path}
		for _, cmd := range cmds {
			if cmd.Hidden {
				continue
			}
			n.commands = append(n.commands, cmd)
			n.words = append(n.words, cmd.Names()...)
			n.children = append(n.children, cmd.Names()...)
		}
		for _, f := range flags {
			if v, ok := f.(ucli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			n.flags = append(n.flags, f)
			spellings := flagSpellings(f)
			n.words = append(n.words, spellings...)
			if v, ok := f.(ucli.DocGenerationFlag); ok && v.TakesValue() {
				n.valueFlags = append(n.valueFlags, spellings...)
			}
		}
		n.words = append(n.words, "--help", "-h")
		if path == "" {
			// urfave/cli adds these to the running app only.
			n.words = append(n.words, "help", "--version", "-v")
		}
		n.words = dedupe(n.words)
		nodes = append(nodes, n)
		for _, cmd := range n.commands {
			walk(strings.TrimSpace(path+" "+cmd.Name), cmd.Flags, cmd.Subcommands)
		}
	}
	walk("", app.Flags, app.Commands)
	return nodes
}

func flagSpellings(f ucli.Flag) []string {
	var out []string
	for _, name := range f.Names() {
		if len(name) == 1 {
			out = append(out, "-"+name)
		} else {
			out = append(out, "--"+name)
		}
	}
	return out
}

func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, w := range s {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// casePatterns joins "path/word" keys as one bash case pattern; every name
// is made of [a-z0-9-], so single quotes need no escaping.
func casePatterns(path string, words []string) string {
	var ps []string
	for _, w := range words {
		ps = append(ps, "'"+path+"/"+w+"'")
	}
	return strings.Join(ps, "|")
}

// writeBashCompletion writes a script with no runtime call back into the
// binary: TAB stays instant and works while the agent's config is broken.
// It walks the words typed so far to the deepest command they name,
// skipping each value flag's argument, then offers that command's
// subcommands and flags. After a value flag it offers nothing, so
// complete -o default falls back to file names (--config, --out).
func writeBashCompletion(w io.Writer, nodes []completionNode) error {
	var b strings.Builder
	b.WriteString(`# bash completion for edge-agent, generated by 'edge-agent completion bash'
# from the commands of this binary. Load it with
#   source <(edge-agent completion bash)
# or save it as /etc/bash_completion.d/edge-agent.
_edge_agent() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path= w i
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case "$path/$w" in
`)
	var valueKeys, childKeys []string
	for _, n := range nodes {
		if len(n.valueFlags) > 0 {
			valueKeys = append(valueKeys, casePatterns(n.path, n.valueFlags))
		}
		if len(n.children) > 0 {
			childKeys = append(childKeys, casePatterns(n.path, n.children))
		}
	}
	if len(valueKeys) > 0 {
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\t((i++)) ;;\n", strings.Join(valueKeys, "|"))
	}
	if len(childKeys) > 0 {
		// An alias takes the command's own name, so the path stays one
		// spelling per command.
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\tpath=${path:+$path }$(_edge_agent_name \"$path\" \"$w\") ;;\n", strings.Join(childKeys, "|"))
	}
	b.WriteString("\t\tesac\n\tdone\n")
	if len(valueKeys) > 0 {
		fmt.Fprintf(&b, "\tcase \"$path/$prev\" in\n\t%s)\n\t\tCOMPREPLY=()\n\t\treturn ;;\n\tesac\n", strings.Join(valueKeys, "|"))
	}
	b.WriteString("\tlocal words=\n\tcase $path in\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "\t'%s') words='%s' ;;\n", n.path, strings.Join(n.words, " "))
	}
	b.WriteString("\tesac\n\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n\n")
	b.WriteString("# _edge_agent_name maps a command alias to the command's name.\n_edge_agent_name() {\n\tcase \"$1/$2\" in\n")
	for _, n := range nodes {
		for _, cmd := range n.commands {
			for _, alias := range cmd.Aliases {
				fmt.Fprintf(&b, "\t'%s/%s') echo %s ;;\n", n.path, alias, cmd.Name)
			}
		}
	}
	b.WriteString("\t*) echo \"$2\" ;;\n\tesac\n}\n\ncomplete -o default -F _edge_agent edge-agent\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeZshCompletion runs the bash script through zsh's own bash
// emulation (bashcompinit), so both shells complete from one generator.
func writeZshCompletion(w io.Writer, nodes []completionNode) error {
	if _, err := io.WriteString(w, "# zsh completion for edge-agent, generated by 'edge-agent completion zsh'.\n"+
		"# Load it in ~/.zshrc after compinit: source <(edge-agent completion zsh)\n"+
		"autoload -U +X bashcompinit && bashcompinit\n\n"); err != nil {
		return err
	}
	return writeBashCompletion(w, nodes)
}

// writeFishCompletion writes fish's own completions: __edge_agent_at
// walks the typed words to the deepest command they name, as the bash
// script does, and each command's subcommands and flags are offered only
// there, with their usage as the description.
func writeFishCompletion(w io.Writer, nodes []completionNode) error {
	var b strings.Builder
	b.WriteString(`# fish completion for edge-agent, generated by 'edge-agent completion fish'
# from the commands of this binary. Save it as
# ~/.config/fish/completions/edge-agent.fish
function __edge_agent_at
	set -l path ''
	set -l skip 0
	set -l words (commandline -opc)
	set -e words[1]
	for w in $words
		if test $skip = 1
			set skip 0
			continue
		end
		switch "$path/$w"
`)
	var valueKeys []string
	for _, n := range nodes {
		if len(n.valueFlags) > 0 {
			valueKeys = append(valueKeys, fishPatterns(n.path, n.valueFlags))
		}
		for _, cmd := range n.commands {
			for _, name := range cmd.Names() {
				fmt.Fprintf(&b, "\t\tcase %s\n\t\t\tset path %s\n", fishQuote(n.path+"/"+name),
					fishQuote(strings.TrimSpace(n.path+" "+cmd.Name)))
			}
		}
	}
	for _, k := range valueKeys {
		fmt.Fprintf(&b, "\t\tcase %s\n\t\t\tset skip 1\n", k)
	}
	b.WriteString("\t\tend\n\tend\n\ttest \"$path\" = \"$argv[1]\"\nend\n\ncomplete -c edge-agent -f\n")
	for _, n := range nodes {
		cond := fishQuote("__edge_agent_at " + fishQuote(n.path))
		for _, cmd := range n.commands {
			for _, name := range cmd.Names() {
				fmt.Fprintf(&b, "complete -c edge-agent -n %s -a %s -d %s\n", cond, fishQuote(name), fishQuote(cmd.Usage))
			}
		}
		for _, f := range n.flags {
			fmt.Fprintf(&b, "complete -c edge-agent -n %s %s\n", cond, fishFlag(f))
		}
		fmt.Fprintf(&b, "complete -c edge-agent -n %s -s h -l help -d 'show help'\n", cond)
		if n.path == "" {
			// urfave/cli adds --version to the running app only.
			fmt.Fprintf(&b, "complete -c edge-agent -n %s -s v -l version -d 'print the version'\n", cond)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishFlag is what fish's complete is told of f: its names, whether it
// takes a value (a file name, maybe) and its usage.
func fishFlag(f ucli.Flag) string {
	var args []string
	for _, name := range f.Names() {
		if len(name) == 1 {
			args = append(args, "-s", name)
		} else {
			args = append(args, "-l", name)
		}
	}
	usage := ""
	if v, ok := f.(ucli.DocGenerationFlag); ok {
		if v.TakesValue() {
			args = append(args, "-r")
			if takesFile(f) {
				args = append(args, "-F")
			}
		}
		usage = v.GetUsage()
	}
	return strings.Join(args, " ") + " -d " + fishQuote(usage)
}

func fishPatterns(path string, words []string) string {
	var ps []string
	for _, w := range words {
		ps = append(ps, fishQuote(path+"/"+w))
	}
	return strings.Join(ps, " ")
}

// fishQuote single-quotes s for fish, where only \ and ' are special
// inside single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func takesFile(f ucli.Flag) bool {
	switch f := f.(type) {
	case *ucli.StringFlag:
		return f.TakesFile
	case *ucli.PathFlag:
		return f.TakesFile
	case *ucli.StringSliceFlag:
		return f.TakesFile
	}
	return false
}
