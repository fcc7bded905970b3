package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Run shows the live view on a terminal (in, out) until q or ctx ends.
// It asks the agent once before it takes over the screen: an agent that
// does not answer is an error returned as it is, on the normal screen.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	o = o.withDefaults()
	first, err := read(ctx, o)
	if err != nil {
		return err
	}
	p := tea.NewProgram(New(ctx, o, &first.st),
		tea.WithContext(ctx), tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil && !(errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil) {
		return fmt.Errorf("top: %w", err)
	}
	return nil
}

// PlainOptions shape the plain text view.
type PlainOptions struct {
	// Once prints one frame, after one interval so that its rates are
	// filled, and returns.
	Once bool
	// Width and Height bound each frame (0: 80 columns, no line limit).
	Width, Height int
}

// Plain is the view for a terminal that cannot be redrawn (TERM=dumb) or
// output that is not a terminal: a frame of plain text each interval, a
// blank line between frames, until ctx ends. A first reading that fails
// is returned; later failures are printed and the next interval retried.
func Plain(ctx context.Context, o Options, p PlainOptions, out io.Writer) error {
	o = o.withDefaults()
	cur, err := read(ctx, o)
	if err != nil {
		return err
	}
	var prev *sample
	var lastErr error
	for frames := 0; ; {
		if !p.Once || prev != nil {
			f := frame{prev: prev, cur: &cur, err: lastErr, interval: o.Interval}
			if frames > 0 {
				fmt.Fprintln(out)
			}
			if _, err := fmt.Fprintln(out, render(f, p.Width, p.Height)); err != nil {
				return fmt.Errorf("top: %w", err)
			}
			frames++
			if p.Once {
				return nil
			}
		}
		t := time.NewTimer(o.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		next, err := read(ctx, o)
		if ctx.Err() != nil {
			return nil
		}
		if lastErr = err; err == nil {
			c := cur
			prev, cur = &c, next
		}
		if err != nil && p.Once {
			return err
		}
	}
}
