package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// The /db/ endpoints, for `edge-agent db` on a running agent.

// DBInfo fetches /db/info.
func (c *Client) DBInfo(ctx context.Context) (dbview.Info, error) {
	var v dbview.Info
	return v, c.do(ctx, http.MethodGet, "/db/info", nil, &v)
}

// DBSummary fetches /db/summary.
func (c *Client) DBSummary(ctx context.Context) (dbview.Summary, error) {
	var v dbview.Summary
	return v, c.do(ctx, http.MethodGet, "/db/summary", nil, &v)
}

// DBList fetches one page of /db/rows.
func (c *Client) DBList(ctx context.Context, q dbview.ListQuery) (dbview.List, error) {
	p := url.Values{"limit": {strconv.Itoa(q.Limit)}}
	if q.Status != nil {
		p.Set("status", q.Status.String())
	}
	if q.AfterID > 0 {
		p.Set("after_id", strconv.FormatUint(q.AfterID, 10))
	}
	var v dbview.List
	return v, c.do(ctx, http.MethodGet, "/db/rows", p, &v)
}

// DBRow fetches /db/rows/{id}.
func (c *Client) DBRow(ctx context.Context, id uint64) (wal.Row, error) {
	var v wal.Row
	return v, c.do(ctx, http.MethodGet, "/db/rows/"+strconv.FormatUint(id, 10), nil, &v)
}

// DBPositions fetches /db/positions, of one input id or (empty) all.
func (c *Client) DBPositions(ctx context.Context, sourceID string) ([]dbview.Position, error) {
	var p url.Values
	if sourceID != "" {
		p = url.Values{"source_id": {sourceID}}
	}
	var v []dbview.Position
	return v, c.do(ctx, http.MethodGet, "/db/positions", p, &v)
}

// DBVerify fetches /db/verify.
func (c *Client) DBVerify(ctx context.Context, maxProblems int) (dbview.Verification, error) {
	var v dbview.Verification
	return v, c.do(ctx, http.MethodGet, "/db/verify", url.Values{"max_problems": {strconv.Itoa(maxProblems)}}, &v)
}

// DBChange posts /db/{change}; dryRun only counts.
func (c *Client) DBChange(ctx context.Context, ch dbview.Change, dryRun bool) (dbview.Result, error) {
	var v dbview.Result
	return v, c.do(ctx, http.MethodPost, "/db/"+string(ch), url.Values{"dry_run": {strconv.FormatBool(dryRun)}}, &v)
}

// DBReread posts /db/reread: the agent reads a.Path again from its offset.
func (c *Client) DBReread(ctx context.Context, a dbview.RereadArgs) (dbview.RereadReport, error) {
	q := url.Values{"path": {a.Path}, "offset": {strconv.FormatInt(a.OffsetOr0(), 10)}}
	if a.Input != "" {
		q.Set("input", a.Input)
	}
	var v dbview.RereadReport
	return v, c.do(ctx, http.MethodPost, "/db/reread", q, &v)
}
