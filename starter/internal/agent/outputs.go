package agent

import (
	"fmt"
	"log/slog"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// openSender builds the configured output through its factory, from the
// options the config layer decoded and checked. Nothing connects here: the
// EdgeSocket client dials on its first Send, in the sender goroutine.
func (r *Agent) openSender() (transport.Sender, encoder, error) {
	typ := r.opts.OutputType
	f, err := r.opts.Outputs.Get(typ)
	if err != nil {
		return nil, nil, fmt.Errorf("set up output: %w", err)
	}
	checkpoint := r.opts.Agent.Delivery == DeliveryCheckpoint
	snd, enc, err := f.Create(r.opts.Output, output.Settings{ID: r.opts.IDs.Output, Logger: unshipped(r.log).With(slog.String("output_type", typ)), Checkpoint: checkpoint})
	if err != nil {
		return nil, nil, fmt.Errorf("set up output %s: %w", typ, err)
	}
	if _, ok := snd.(transport.Committer); checkpoint && !ok {
		_ = snd.Close()
		return nil, nil, fmt.Errorf("set up output %s: agent.delivery-guarantee CHECKPOINT needs output.type transport (an EdgeSocket engine whose checkpoints it can ask about); "+
			"use BEST_EFFORT with output.type %s", typ, typ)
	}
	if enc == nil {
		// RAW: the sender loop hands the stored bytes over as they are.
		return snd, rawEncoder{}, nil
	}
	return snd, enc, nil
}

// clientStats is what the EdgeSocket client reports about its connections.
type clientStats interface{ Stats() client.Stats }

// unshipped is l for delivery's own reports: they still reach the log
// file, but never the agent's own-log sinks (the self input), whose rows
// this very path delivers. A failure to deliver is thus never turned into
// more rows to deliver. l itself when its handler ships nothing.
func unshipped(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if h, ok := l.Handler().(interface{ WithoutOwnLogs() slog.Handler }); ok {
		return slog.New(h.WithoutOwnLogs())
	}
	return l
}
