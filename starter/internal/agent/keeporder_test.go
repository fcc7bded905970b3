package agent

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
)

func TestKeepOrder(t *testing.T) {
	const (
		R = transport.Received
		N = transport.NotSent
		F = transport.Failed
	)
	for _, tt := range []struct {
		name    string
		in      []transport.Outcome
		want    []transport.Outcome
		wantGap bool
	}{
		{"all received", []transport.Outcome{R, R, R}, []transport.Outcome{R, R, R}, false},
		{"a failed tail", []transport.Outcome{R, F, N}, []transport.Outcome{R, F, N}, true},
		{"received after a failed row goes back", []transport.Outcome{R, F, R, R}, []transport.Outcome{R, F, N, N}, true},
		{"received after an unsent row goes back", []transport.Outcome{N, R, F, R}, []transport.Outcome{N, N, F, N}, true},
		{"none", nil, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := make([]transport.Result, len(tt.in))
			for i, o := range tt.in {
				res[i] = transport.Result{ID: int64(i + 1), Outcome: o}
			}
			gap := keepOrder(res)
			var got []transport.Outcome
			for i, r := range res {
				got = append(got, r.Outcome)
				if r.ID != int64(i+1) {
					t.Fatalf("result %d has id %d", i, r.ID)
				}
			}
			if gap != tt.wantGap || !slices.Equal(got, tt.want) {
				t.Fatalf("keepOrder(%v) = %v, gap %v; want %v, gap %v", tt.in, got, gap, tt.want, tt.wantGap)
			}
		})
	}
}

// orderSender is a transport.Committer whose Send answers each batch
// as outcomes says (Received when it runs short) and whose Settle
// succeeds; it records the batch ids of every Send.
type orderSender struct {
	outcomes []transport.Outcome
	sends    [][]int64
	settles  int
}

func (o *orderSender) Send(_ context.Context, batches []transport.Batch) ([]transport.Result, error) {
	var ids []int64
	out := make([]transport.Result, len(batches))
	for i, b := range batches {
		ids = append(ids, b.ID)
		out[i] = transport.Result{ID: b.ID, Outcome: transport.Received}
		if len(o.outcomes) > 0 {
			out[i].Outcome, o.outcomes = o.outcomes[0], o.outcomes[1:]
		}
	}
	o.sends = append(o.sends, ids)
	return out, nil
}

func (o *orderSender) Settle(context.Context, []int64, func(int64) (transport.Batch, bool)) ([]transport.CommitResult, []transport.Result, error) {
	o.settles++
	return nil, nil, nil
}

func (o *orderSender) Poll(_ context.Context, id int64) (transport.CommitResult, error) {
	return transport.CommitResult{ID: id, Verdict: transport.VerdictPending}, nil
}

func (o *orderSender) Watermark() int64 { return 0 }
func (o *orderSender) Close() error     { return nil }

// In CHECKPOINT delivery a Send whose row failed on a session that lives
// on hands the rows RECEIVED after it back, and every job queued behind
// it comes back unsent (ErrUnsettled) until a settle ran: nothing passes
// the failed row.
func TestSenderHoldsJobsBehindAFailedRow(t *testing.T) {
	snd := &orderSender{outcomes: []transport.Outcome{transport.Received, transport.Failed, transport.Received}}
	s := &sendLoop{snd: snd, enc: rawEncoder{}, now: time.Now, ctr: &counters{}, pub: &published{}, inOrder: true}
	ctx := t.Context()
	send := func(j *job) *jobResult {
		res, _ := s.do(ctx, &encodedJob{job: j}, nil)
		return res
	}
	res := send(pipelineJob(1, 3))
	want := []transport.Outcome{transport.Received, transport.Failed, transport.NotSent}
	for i, r := range res.results {
		if r.Outcome != want[i] {
			t.Fatalf("job 1 row %d: %v, want %v", i, r.Outcome, want[i])
		}
	}
	res = send(pipelineJob(2, 3))
	if !res.skipped || !errors.Is(res.err, transport.ErrUnsettled) || len(snd.sends) != 1 {
		t.Fatalf("job 2: skipped %v, err %v, sends %v: want it handed back unsent", res.skipped, res.err, snd.sends)
	}
	send(&job{seq: 3, settle: &settleReq{}})
	send(pipelineJob(4, 3))
	if snd.settles != 1 || len(snd.sends) != 2 || snd.sends[1][0] != 10 {
		t.Fatalf("settles %d, sends %v: want job 4 sent after the settle", snd.settles, snd.sends)
	}
}

// fakeCkQueue is a checkpointQueue of fixed answers.
type fakeCkQueue struct {
	received []receivedRow
	due      time.Time // of the lowest PENDING row; zero: none
}

func (f *fakeCkQueue) Received() ([]receivedRow, error) { return f.received, nil }
func (f *fakeCkQueue) FirstReceived() (receivedRow, bool, error) {
	if len(f.received) == 0 {
		return receivedRow{}, false, nil
	}
	return f.received[0], true, nil
}
func (f *fakeCkQueue) Payload(uint64) ([]byte, bool, error)   { return nil, false, nil }
func (f *fakeCkQueue) FirstPending() (time.Time, bool, error) { return f.due, !f.due.IsZero(), nil }

// A row job that comes back with a row not RECEIVED, on a session that
// lives on, stops the claims; the settle waits until those results are
// in the WAL and the lowest PENDING row is due, so the first claim after
// it starts with that row.
func TestCheckpointSettleWaitsForTheLowestRow(t *testing.T) {
	now := time.Unix(1000, 0)
	q := &fakeCkQueue{received: []receivedRow{{ID: 1, BatchID: 11}}}
	c := newCheckpointing(q, Settings{CheckpointPoll: time.Second, CheckpointTimeout: time.Minute})
	c.needSettle = false
	j := pipelineJob(1, 3)
	res := &jobResult{job: j, results: []transport.Result{{Outcome: transport.Received}, {Outcome: transport.Failed}, {Outcome: transport.NotSent}}}
	c.accept(res, now, testLogger(t))
	if !c.holdsClaims() {
		t.Fatal("claims go on after a row failed")
	}
	if req, err := c.job(now, 0); err != nil || req != nil {
		t.Fatalf("settle %+v, %v before the results are in the WAL", req, err)
	}
	q.due = now.Add(time.Second) // the failed row waits for its backoff
	c.committed(now, 0, 1)
	if req, err := c.job(now, 0); err != nil || req != nil {
		t.Fatalf("settle %+v, %v while the lowest PENDING row waits", req, err)
	}
	req, err := c.job(now.Add(time.Second), 0)
	if err != nil || req == nil || req.poll || !slices.Equal(req.ids, []int64{11}) {
		t.Fatalf("settle %+v, %v once the row is due: want one asking about 11", req, err)
	}
}
