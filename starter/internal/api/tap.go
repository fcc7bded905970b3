package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/tap"
)

// TapPath streams a sample of the events at one stage (`edge-agent tap`):
// payloads, so it is guarded like every route that is not open.
const TapPath = "/debug/tap"

// TapLine is one line of the NDJSON stream: an event, or the last line
// (End set), which says why the stream ended and what the tap missed.
type TapLine struct {
	Time  time.Time       `json:"time,omitzero"`
	Stage string          `json:"stage,omitempty"`
	Input string          `json:"input,omitempty"`
	Event json.RawMessage `json:"event,omitempty"`
	// Text is an event that is not JSON, as text.
	Text string `json:"text,omitempty"`

	End string `json:"end,omitempty"`
	// SampledOut were left out by the rate; Dropped while this reader
	// was behind; Shown are the event lines sent.
	SampledOut int64 `json:"sampled_out,omitempty"`
	Dropped    int64 `json:"dropped,omitempty"`
	Shown      int64 `json:"shown,omitempty"`
}

// Why a tap stream ended (TapLine.End).
const (
	TapEndLimit   = "limit reached"
	TapEndStopped = "agent stopping"
)

// TapQuery is what a tap asks for; Limit 0 means until the reader or the
// agent stops.
type TapQuery struct {
	tap.Filter
	Limit int
}

func (q TapQuery) values() url.Values {
	v := url.Values{"stage": {q.Stage.String()}}
	if q.Input != "" {
		v.Set("input", q.Input)
	}
	if q.Rate > 0 {
		v.Set("rate", strconv.Itoa(q.Rate))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

func tapQuery(r *http.Request, inputs []string) (TapQuery, error) {
	var q TapQuery
	var err error
	stage := r.URL.Query().Get("stage")
	if stage == "" {
		stage = tap.StageProcessed.String()
	}
	if q.Stage, err = tap.ParseStage(stage); err != nil {
		return q, badRequest("%v", err)
	}
	q.Input = r.URL.Query().Get("input")
	if q.Input != "" && !slices.Contains(inputs, q.Input) {
		return q, notFound{fmt.Errorf("no input with id %q: the agent runs %s", q.Input, strings.Join(inputs, ", "))}
	}
	if q.Rate, err = intParam(r, "rate", tap.DefaultRate); err != nil {
		return q, err
	}
	if q.Rate == 0 || q.Rate > tap.MaxRate {
		return q, badRequest("rate must be between 1 and %d events a second, got %d", tap.MaxRate, q.Rate)
	}
	if q.Limit, err = intParam(r, "limit", 0); err != nil {
		return q, err
	}
	return q, nil
}

// notFound is a query naming what the agent does not have (404).
type notFound struct{ error }

// serveTap streams events as NDJSON until the limit, the client going
// away, or the agent stopping; the subscription drops for this reader
// when it is behind, and the pipeline never waits for it.
func serveTap(rw http.ResponseWriter, r *http.Request, o *Options) {
	var inputs []string
	for _, in := range o.Source.Snapshot().Inputs {
		inputs = append(inputs, in.ID)
	}
	q, err := tapQuery(r, inputs)
	if err != nil {
		code := statusOfError(err)
		if errors.As(err, new(notFound)) {
			code = http.StatusNotFound
		}
		writeError(rw, o, code, err)
		return
	}
	sub, err := o.Tap(q.Filter)
	if err != nil {
		writeError(rw, o, http.StatusServiceUnavailable, err)
		return
	}
	defer sub.Close()
	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(http.StatusOK)
	flush := http.NewResponseController(rw)
	_ = flush.Flush()
	enc := json.NewEncoder(rw)
	shown := 0
	end := func(why string) {
		out, dropped, _ := sub.Counts()
		_ = enc.Encode(TapLine{End: why, SampledOut: out, Dropped: dropped, Shown: int64(shown)})
		_ = flush.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				end(TapEndStopped)
				return
			}
			line := TapLine{Time: ev.Time.UTC(), Stage: ev.Stage.String(), Input: ev.Input}
			if json.Valid(ev.Payload) {
				line.Event = ev.Payload
			} else {
				line.Text = string(ev.Payload)
			}
			if err := enc.Encode(line); err != nil {
				return // the reader went away
			}
			if err := flush.Flush(); err != nil {
				return
			}
			shown++
			if q.Limit > 0 && shown >= q.Limit {
				end(TapEndLimit)
				return
			}
		}
	}
}

// Tap streams the lines of a tap to each, until the stream ends (its last
// line, End set, is passed too), ctx ends, or each returns an error.
func (c *Client) Tap(ctx context.Context, q TapQuery, each func(TapLine) error) error {
	resp, err := c.stream(ctx, TapPath, q.values())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var line TapLine
		if err := dec.Decode(&line); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read the tap stream: %w", err)
		}
		if err := each(line); err != nil {
			return err
		}
		if line.End != "" {
			return nil
		}
	}
}
