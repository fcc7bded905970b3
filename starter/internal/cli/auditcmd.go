package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/account"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

func (a *agentCLI) auditCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "audit",
		Usage:     "check a file of delivered rows: every _seq of every input delivered or covered by a gap record",
		UsageText: "edge-agent audit [--json] FILE",
		Description: `Reads FILE, rows as a sink wrote them, one JSON value a line (the event
object itself, or an envelope holding it as "payload", an object or a
string of JSON: what edgesocket-receiver --format payload or envelope and
the console output write), "-" for standard input. The agent writes the
fields it checks with agent.account: true.

For each host ("_host", when the rows carry it) and input ("_input") it
checks that the rows' "_seq" numbers and the gap records' first_seq..last_seq
ranges cover 1..the highest number seen: it prints the rows, the rows the
gap records account for, the duplicates (a number covered twice: delivery
is at-least-once, so they are counted, not an error) and the missing
ranges. Records of bytes an input never read (a file rotated away or
deleted before it was read to its end) are counted apart:
those bytes were never rows and take no number. Lines that are not JSON
and rows without "_seq" are counted.

Exit codes: 0 every input complete, 1 a number missing or a gap record
inconsistent (or FILE unreadable), 64 bad flags or arguments.

Examples:
   edge-agent audit received.ndjson
   edge-agent audit --json - < received.ndjson`,
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
		},
		OnUsageError: usageError,
		Action:       a.audit,
	}
}

func (a *agentCLI) audit(c *ucli.Context) error {
	if c.NArg() != 1 {
		return withCode(exitcode.Usage, fmt.Errorf("audit takes one FILE (or - for standard input), got %d arguments", c.NArg()))
	}
	name := c.Args().First()
	var r io.Reader = a.env.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		defer f.Close()
		r = f
	}
	rep, err := account.Audit(r)
	if err != nil {
		return fmt.Errorf("audit %s: %w", name, err)
	}
	out := a.env.Stdout
	if c.Bool("json") {
		b, _ := json.Marshal(struct {
			account.Report
			OK bool `json:"ok"`
		}{rep, rep.OK()})
		fmt.Fprintf(out, "%s\n", b)
	} else {
		printAudit(out, rep)
	}
	if !rep.OK() {
		return quietCode(exitcode.Failure)
	}
	return nil
}

func printAudit(out io.Writer, rep account.Report) {
	fmt.Fprintf(out, "%d lines read, %d not JSON, %d rows without _seq\n", rep.Lines, rep.Unreadable, rep.Unstamped)
	if len(rep.Streams) == 0 {
		fmt.Fprintln(out, "no row with _seq and no gap record: nothing to check (is agent.account on?)")
	}
	for _, s := range rep.Streams {
		host := s.Host
		if host == "" {
			host = "-"
		}
		verdict := "complete"
		if !s.OK() {
			verdict = "INCOMPLETE"
		}
		fmt.Fprintf(out, "host %s input %s: %s: seq 1..%d: %d rows, %d in %d gap records, %d duplicates",
			host, s.Input, verdict, s.Max, s.Rows, s.GapRows, s.GapRecords, s.Duplicates)
		if s.CountOnly > 0 {
			fmt.Fprintf(out, ", %d more given up with unknown _seq", s.CountOnly)
		}
		if s.LossRecords > 0 {
			fmt.Fprintf(out, ", %d bytes never read (%d records: files gone before they were read)", s.UnreadBytes, s.LossRecords)
		}
		if s.BadRecords > 0 {
			fmt.Fprintf(out, ", %d gap records whose count disagrees with their range", s.BadRecords)
		}
		fmt.Fprintln(out)
		if len(s.Missing) > 0 {
			parts := make([]string, 0, min(len(s.Missing), 20))
			for i, m := range s.Missing {
				if i == 20 {
					parts = append(parts, fmt.Sprintf("… %d more ranges", len(s.Missing)-20))
					break
				}
				parts = append(parts, fmt.Sprintf("%d..%d", m[0], m[1]))
			}
			fmt.Fprintf(out, "  missing %d: %s\n", s.MissingCount(), strings.Join(parts, ", "))
		}
	}
}
