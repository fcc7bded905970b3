package cli

import (
	"encoding/json"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
)

func (a *agentCLI) tapCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "tap",
		Usage:     "show a live sample of the events a running agent reads, processes or sends (exit 3 not running)",
		UsageText: "edge-agent tap [--config FILE] [--input ID] [--stage input|processed|sent] [--rate N] [--limit N]",
		Description: `Streams, over the running agent's HTTP API (with http.token and http.tls
as agent.yaml sets them, like status), the events seen at one stage, one
JSON object a line on stdout: time, stage, input and the event.

Stages: input (as the input read it, with the input's redaction applied:
nothing its redact processors hide is shown), processed (after the
processors, as written to the queue; the default), sent (as the engine
received it).

It is a sample: at most --rate events a second are shown, and when this
reader falls behind the agent drops events for it rather than wait. The
pipeline never waits for a tap. When the stream ends (--limit reached, the
agent stopping) a summary goes to stderr with what was left out.

Exit codes: 0 when the stream ended, 3 when no agent runs, 64 for a bad
flag, 1 when the
running agent's API cannot be read or refuses the query (an unknown
input id).

Examples:
   edge-agent tap
   edge-agent tap --input app --stage input --rate 5
   edge-agent tap --stage sent --limit 20 | jq .event`,
		Flags: agentFlags(
			&ucli.StringFlag{Name: "input", Usage: "only the events of this input id"},
			&ucli.StringFlag{Name: "stage", Value: tap.StageProcessed.String(), Usage: "input, processed or sent"},
			&ucli.IntFlag{Name: "rate", Value: tap.DefaultRate, Usage: fmt.Sprintf("most events a second (1 to %d)", tap.MaxRate)},
			&ucli.IntFlag{Name: "limit", Usage: "stop after this many events (0: until interrupted)"},
		),
		OnUsageError: usageError,
		Action:       a.tap,
	}
}

func (a *agentCLI) tap(c *ucli.Context) error {
	stage, err := tap.ParseStage(c.String("stage"))
	if err != nil {
		return usageError(c, fmt.Errorf("--stage: %w", err), true)
	}
	if r := c.Int("rate"); r < 1 || r > tap.MaxRate {
		return usageError(c, fmt.Errorf("--rate must be between 1 and %d, got %d", tap.MaxRate, r), true)
	}
	if c.Int("limit") < 0 {
		return usageError(c, fmt.Errorf("--limit must be 0 or more, got %d", c.Int("limit")), true)
	}
	client, pid, err := a.runningAPI(c)
	if err != nil {
		return err
	}
	q := api.TapQuery{Filter: tap.Filter{Stage: stage, Input: c.String("input"), Rate: c.Int("rate")}, Limit: c.Int("limit")}
	enc := json.NewEncoder(a.env.Stdout)
	err = client.Tap(c.Context, q, func(l api.TapLine) error {
		if l.End != "" {
			fmt.Fprintf(a.env.Stderr, "tap ended (%s): %d shown, %d left out by --rate, %d dropped while this reader was behind\n",
				l.End, l.Shown, l.SampledOut, l.Dropped)
			return nil
		}
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("write the tap to stdout: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tap of the agent (pid %d): %w", pid, err)
	}
	return nil
}
