package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/edge-agent/edge-agent/connector/input"
)

// RereadOutcome is what Reread did: the input that moved its position
// and its figures.
type RereadOutcome struct {
	Input string
	input.RereadResult
}

// Rereadable lists the ids of the running inputs that can re-read a
// source (input.Rereader); nil before the inputs are open. Safe from any
// goroutine.
func (r *Agent) Rereadable() []string {
	e := r.ext.Load()
	if e == nil {
		return nil
	}
	var ids []string
	for _, s := range e.inputs {
		if _, ok := s.in.(input.Rereader); ok {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// Reread asks the input that reads path (inputID, or the first input that
// does when inputID is "") to read it again from offset. The loop makes
// the change between two of its turns, as it makes UpdateWAL's: the
// input's new position reaches the queue with its next poll, after what
// the input read before, and is stored with the next commit like every
// position. Once the loop took the request it runs it even if ctx ends.
func (r *Agent) Reread(ctx context.Context, inputID, path string, offset int64) (RereadOutcome, error) {
	var out RereadOutcome
	req := &adminReq{done: make(chan error, 1), run: func(l *loop) error {
		var err error
		out, err = l.reread(ctx, inputID, path, offset)
		return err
	}}
	select {
	case r.admin <- req:
	case <-r.stopped:
		return out, errors.New("reread: the agent is not running")
	case <-ctx.Done():
		return out, fmt.Errorf("reread: %w", ctx.Err())
	}
	err := <-req.done
	return out, err
}

// reread runs on the loop goroutine: it offers the request to the inputs
// in config order (the first that matches a file is the one reading it).
func (l *loop) reread(ctx context.Context, inputID, path string, offset int64) (RereadOutcome, error) {
	if strings.TrimSpace(path) == "" {
		return RereadOutcome{}, errors.New(`reread: no "path": name a file an input reads`)
	}
	var inputs, notRead []string
	found := false
	for _, s := range l.in.list {
		inputs = append(inputs, s.id+" ("+s.typ+")")
		if inputID != "" && s.id != inputID {
			continue
		}
		found = true
		rr, ok := s.in.(input.Rereader)
		if !ok {
			if inputID != "" {
				return RereadOutcome{}, fmt.Errorf("reread: input %s is of type %s, which cannot re-read a file", s.id, s.typ)
			}
			continue
		}
		res, err := rr.Reread(ctx, path, offset)
		if errors.Is(err, input.ErrNotRead) {
			notRead = append(notRead, fmt.Sprintf("input %s: %v", s.id, err))
			continue
		}
		if err != nil {
			return RereadOutcome{}, fmt.Errorf("input %s: %w", s.id, err)
		}
		l.log.Info("input position moved on request; its lines from there are read and delivered again",
			"input_id", s.id, "path", res.Path, "offset", res.Start, "reread_bytes", res.Reread, "skipped_bytes", res.Skipped)
		return RereadOutcome{Input: s.id, RereadResult: res}, nil
	}
	switch {
	case inputID != "" && !found:
		return RereadOutcome{}, fmt.Errorf("reread: no input has id %q; the inputs are %s", inputID, strings.Join(inputs, ", "))
	case len(notRead) == 0:
		return RereadOutcome{}, fmt.Errorf("reread %s: no input can re-read a file; the inputs are %s", path, strings.Join(inputs, ", "))
	}
	return RereadOutcome{}, notReadError("reread " + path + ": no file input reads it; " + strings.Join(notRead, "; "))
}

// notReadError is a path no input reads: errors.Is input.ErrNotRead, in
// the inputs' own words.
type notReadError string

func (e notReadError) Error() string { return string(e) }
func (e notReadError) Unwrap() error { return input.ErrNotRead }
