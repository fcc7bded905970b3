package dbcli

import (
	"cmp"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

func (r *runner) salvage(c *cli.Context) error {
	dryRun := c.Bool(flagDryRun)
	dst := r.resolve(c.String("out"))
	if dst == "" && !dryRun {
		return errors.New("salvage needs --out <new file> (or --dry-run)")
	}
	limit := c.Int("max-problems")
	if limit < 0 {
		return fmt.Errorf("--max-problems must be >= 0, got %d", limit)
	}
	// Salvage reads the file below bbolt, without its lock: a running
	// agent could change it under the read.
	if _, alive := r.agentPID(); alive {
		return fmt.Errorf("agent is running (pid file %s); stop the agent before salvage", r.pidFile())
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	path := s.path
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no WAL at %s (set --db-path, %s or queue.path in --config): %w", path, envDBPath, wal.ErrNotFound)
	}
	rep, err := wal.Salvage(path, dst, wal.SalvageOptions{DryRun: dryRun, Fsync: true, Now: r.env.Now, Logger: r.env.Logger, Encryption: s.enc,
		GapOrigin: r.gapOrigin()})
	if err != nil {
		return err
	}
	o := r.stdout(c)
	if dryRun {
		fmt.Fprintf(o, "DRY-RUN: would salvage %s; nothing was written\n", rep.Source)
	} else {
		fmt.Fprintf(o, "salvaged %s into %s\n", rep.Source, rep.Dest)
	}
	fmt.Fprintf(o, "rows copied: %d (PENDING %d, RECEIVED %d, ACKED %d, DEAD %d)\n", rep.Copied(),
		rep.Rows[wal.StatusPending], rep.Rows[wal.StatusReceived], rep.Rows[wal.StatusAcked], rep.Rows[wal.StatusDead])
	if rep.OlderState {
		fmt.Fprintln(o, "the newest state of the file is unreadable: the previous transaction's state was read (see DAMAGE)")
	}
	if rep.Scanned > 0 {
		fmt.Fprintf(o, "rows among them found on pages outside the readable tree: %d (some may have been delivered already and will be sent again)\n", rep.Scanned)
	}
	fmt.Fprintf(o, "positions copied: %d; agent metadata entries copied: %d\n", rep.Positions, rep.AppMeta)
	fmt.Fprintf(o, "rows with a damaged key, copied under a new id(pk): %d\n", len(rep.Renumbered))
	for i, rn := range rep.Renumbered {
		if limit > 0 && i >= limit {
			fmt.Fprintf(o, "  ... and %d more\n", len(rep.Renumbered)-i)
			break
		}
		fmt.Fprintf(o, "  RENUMBERED: key %x (page %d) -> id(pk) %d\n", rn.Key, rn.Page, rn.NewID)
	}
	fmt.Fprintf(o, "rows not copied (value unreadable or checksum mismatch): %d\n", len(rep.BadRows))
	for i, p := range rep.BadRows {
		if limit > 0 && i >= limit {
			fmt.Fprintf(o, "  ... and %d more\n", len(rep.BadRows)-i)
			break
		}
		fmt.Fprintf(o, "  NOT COPIED: %s\n", p)
	}
	if len(rep.GapRecords) > 0 {
		var n int64
		for _, g := range rep.GapRecords {
			n += g.Count
		}
		fmt.Fprintf(o, "gap records for the rows not copied (agent.account: the stream accounts for them): %d, covering %d rows\n", len(rep.GapRecords), n)
		for i, g := range rep.GapRecords {
			if limit > 0 && i >= limit {
				fmt.Fprintf(o, "  ... and %d more\n", len(rep.GapRecords)-i)
				break
			}
			if g.Covers() {
				fmt.Fprintf(o, "  GAP: input %s _seq %d..%d (%d rows)\n", g.Input, g.FirstSeq, g.LastSeq, g.Count)
			} else {
				fmt.Fprintf(o, "  GAP: input %s, %d rows whose _seq is not known\n", cmp.Or(g.Input, "unknown"), g.Count)
			}
		}
	}
	if rep.ClaimIDs > 0 || len(rep.LostClaimIDs) > 0 {
		fmt.Fprintf(o, "copied rows keeping the batch id their claim gave them: %d\n", rep.ClaimIDs)
		n := int64(0)
		for _, r := range rep.LostClaimIDs {
			n += r[1] - r[0] + 1
		}
		fmt.Fprintf(o, "batch ids sent with rows not copied, given stand-ins (the engine's watermark passes them): %d\n", n)
		for i, r := range rep.LostClaimIDs {
			if limit > 0 && i >= limit {
				fmt.Fprintf(o, "  ... and %d more\n", len(rep.LostClaimIDs)-i)
				break
			}
			fmt.Fprintf(o, "  STAND-IN: batch ids %d..%d\n", r[0], r[1])
		}
	}
	fmt.Fprintf(o, "unreadable parts of the file (their rows and positions are lost, not counted above): %d\n", len(rep.Damage))
	for i, d := range rep.Damage {
		if limit > 0 && i >= limit {
			fmt.Fprintf(o, "  ... and %d more\n", len(rep.Damage)-i)
			break
		}
		fmt.Fprintf(o, "  DAMAGE: %s\n", d)
	}
	fmt.Fprintf(o, "%s is unchanged.", rep.Source)
	if !dryRun {
		fmt.Fprintf(o, " To use the copy: with the agent stopped, keep %s aside, move %s over it, start the agent.", rep.Source, rep.Dest)
	}
	fmt.Fprintln(o)
	return nil
}

// gapOrigin names this host and the agent (its id file, when it can be
// read) in the gap records salvage writes for the rows it loses.
func (r *runner) gapOrigin() *wal.GapOrigin {
	host, _ := os.Hostname()
	ids, _ := identity.Read(paths.IDFile(r.getenv, r.env.Home))
	return &wal.GapOrigin{Host: host, AgentID: ids.Agent}
}
