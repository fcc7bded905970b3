package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
)

// maxProcessLine bounds one line of `process`'s input.
const maxProcessLine = 1 << 20

func (a *agentCLI) processCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "process",
		Usage:     "dry run: pass lines from stdin through an input's processors, print what each becomes",
		UsageText: "edge-agent process [--config FILE] [--input ID] < LINES",
		Description: `Reads lines from stdin, makes each the event a file input would
(payload, _file "-", _line, _offset, _ts), runs it through the input's
processors and then the agent's (agent.processors), and prints each
resulting event as one JSON line on stdout. A dropped event prints nothing;
events dedup folds print when their window closes or at the end of the input.
Then one summary line per processor goes to stderr. No WAL, no network:
nothing is stored or sent. --input picks the entry of inputs: by id (needed
when there are several).

Examples:
   edge-agent process --config agent.yaml --input app < sample.log
   tail -n 1000 /var/log/app.log | edge-agent process --input app`,
		Flags: []ucli.Flag{
			configFlag(),
			&ucli.StringFlag{Name: "input", Usage: "id of the inputs: entry whose processors run"},
		},
		OnUsageError: usageError,
		Action:       a.process,
	}
}

func (a *agentCLI) process(c *ucli.Context) error {
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	cfg, _, err := a.loadConfig(explicit, nil)
	if err != nil {
		return err
	}
	opts := cfg.AgentOptions()
	steps, err := pickSteps(opts, c.String("input"))
	if err != nil {
		return withCode(exitcode.Usage, err)
	}
	chain, err := processing.New(steps, processing.Settings{})
	if err != nil {
		return withCode(exitcode.Config, err)
	}
	in := a.env.Stdin
	if in == nil {
		in = strings.NewReader("")
	}
	if err := runProcess(chain, in, a.env.Stdout, time.Now); err != nil {
		return withCode(exitcode.Failure, err)
	}
	printSummary(a.env.Stderr, chain.Stats())
	return nil
}

// pickSteps returns the processors of the input id names ("" for the
// only input).
func pickSteps(opts agent.Options, id string) ([]processing.Step, error) {
	var ids []string
	for _, sp := range opts.InputList {
		if sp.ID == id || id == "" && len(opts.InputList) == 1 {
			return sp.Processors, nil
		}
		ids = append(ids, sp.ID)
	}
	if id == "" {
		return nil, fmt.Errorf("the config has %d inputs: pick one with --input (%s)", len(ids), strings.Join(ids, ", "))
	}
	return nil, fmt.Errorf("no input with id %q: the ids are %s", id, strings.Join(ids, ", "))
}

// runProcess feeds each line of r through chain and writes every event
// that comes out, flushing what dedup holds at the end.
func runProcess(chain *processing.Chain, r io.Reader, w io.Writer, now func() time.Time) error {
	bw := bufio.NewWriter(w)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxProcessLine)
	var batch []input.Event
	offset := 0
	write := func(events []input.Event) error {
		for _, ev := range events {
			if ev.Payload == nil {
				continue
			}
			bw.Write(ev.Payload)
			if err := bw.WriteByte('\n'); err != nil {
				return fmt.Errorf("write stdout: %w", err)
			}
		}
		return nil
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		t := now()
		payload, err := json.Marshal(map[string]any{
			"_file": "-", "_line": n, "_offset": offset, "_ts": t.UnixMilli(), "payload": strings.ToValidUTF8(line, "\uFFFD"),
		})
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		offset += len(sc.Bytes()) + 1
		batch = chain.Process(append(batch[:0], input.Event{Payload: payload}), 0, t)
		if err := write(batch); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("stdin: a line longer than %d bytes", maxProcessLine)
		}
		return fmt.Errorf("read stdin: %w", err)
	}
	if err := write(chain.Flush(batch[:0], now())); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// printSummary writes one line per processor.
func printSummary(w io.Writer, st processing.ChainStats) {
	for _, s := range st.Steps {
		fmt.Fprintf(w, "processors[%d] %-11s %s\n", s.Step, s.Kind, processing.FormatCounts(s))
	}
	if st.Undecodable > 0 {
		fmt.Fprintf(w, "not JSON objects, passed on unprocessed: %d\n", st.Undecodable)
	}
	if len(st.Steps) == 0 {
		fmt.Fprintln(w, "no processors: every event passes unchanged")
	}
}
