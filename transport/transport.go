package transport

import (
	"context"
	"errors"
	"fmt"
)

// Batch is one EdgeSocket __BATCH__ request: one WAL row, one event.
type Batch struct {
	// ID is the wire batch id. It must be > 0 and is reused on every resend.
	ID int64
	// Payload is the encoded wire payload (RAW text or PACKET envelope).
	// It must not contain '\n' or '\r'.
	Payload []byte
}

// Outcome says what became of one batch in a Send call.
type Outcome int

const (
	// NotSent: the batch never reached the engine (no connection, the call
	// stopped first), or it was on the wire, unanswered, when the caller
	// stopped (Close, ctx) or the engine broke the protocol: neither is the
	// row's fault. The caller must not charge an attempt for it.
	NotSent Outcome = iota
	// Received: the engine replied RECEIVED; the caller may ack the row.
	Received
	// Failed: the batch reached the engine and was refused (RETRY until the
	// attempt budget ran out, DECODE_FAILED, BAD_REQUEST, INVALID_PARAM, an
	// unknown reply) or went unanswered on a connection that then failed.
	// The caller charges one attempt.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case NotSent:
		return "not_sent"
	case Received:
		return "received"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Result is the fate of one batch. Err explains a Failed or NotSent outcome.
type Result struct {
	ID      int64
	Outcome Outcome
	Err     error
}

// Sender delivers batches. Send returns one Result per batch, in the order
// given, even when it also returns an error. A returned error means the call
// stopped early: see the sentinels for what the caller should do next.
type Sender interface {
	Send(ctx context.Context, batches []Batch) ([]Result, error)
	Close() error
}

// Verdict is the engine's answer to "__COMMIT__:<id>": whether a
// completed checkpoint of the job covers that batch.
type Verdict int

const (
	// VerdictUnknown: no usable answer (the call stopped first).
	VerdictUnknown Verdict = iota
	// VerdictAcked: ACK:<w>; every batch id <= Watermark is in a
	// completed checkpoint, the asked id included.
	VerdictAcked
	// VerdictPending: received, not yet covered by a completed checkpoint.
	VerdictPending
	// VerdictRetry: the engine does not know the id (never received, or
	// lost with the job's memory): send the batch again.
	VerdictRetry
	// VerdictResend: lost in a restore from a checkpoint: send it again.
	VerdictResend
	// VerdictUnsupported: INVALID_PARAM, BAD_REQUEST or another answer no
	// engine with checkpoint commits gives: the receiver cannot tell.
	VerdictUnsupported
)

func (v Verdict) String() string {
	switch v {
	case VerdictAcked:
		return "acked"
	case VerdictPending:
		return "pending"
	case VerdictRetry:
		return "retry"
	case VerdictResend:
		return "resend"
	case VerdictUnsupported:
		return "unsupported"
	}
	return "unknown"
}

// Lost reports whether the verdict asks for the batch to be sent again.
func (v Verdict) Lost() bool { return v == VerdictRetry || v == VerdictResend }

// CommitResult is the answer about one batch id.
type CommitResult struct {
	ID      int64
	Verdict Verdict
	// Watermark is w of an ACK:<w>, 0 otherwise.
	Watermark int64
	// Reply is the reply line as read, for logs.
	Reply string
}

// Committer is a Sender whose receiver can say which batches a completed
// checkpoint of the job covers (CHECKPOINT delivery).
//
// A Committer opened for checkpoint delivery refuses to send a batch on a
// session that has not been settled: after every new session, Send
// returns ErrUnsettled, without writing a batch, until Settle ran on it.
// A job started afresh after a crash answers RETRY for the ids it lost
// only until the first new id arrives, and ACKs all of them after that,
// so the ids held as received must be asked about, and the lost ones sent
// again, before anything else.
type Committer interface {
	Sender
	// Settle asks about ids (ascending), then sends again, lowest first
	// and the lowest alone, the batches whose ids came back lost
	// (Verdict.Lost), taking each from resend, and marks the session
	// settled. It returns one CommitResult per id and one Result per
	// batch it sent again. ids may be empty: the session is then opened
	// if need be and settled at once.
	Settle(ctx context.Context, ids []int64, resend func(id int64) (Batch, bool)) ([]CommitResult, []Result, error)
	// Poll asks about one id on the current session, which must have
	// been settled: on a new one it asks nothing and returns
	// ErrUnsettled (a poll must never stand in for a settle).
	Poll(ctx context.Context, id int64) (CommitResult, error)
	// Watermark is the highest ACK:<w> the receiver answered so far,
	// to a commit barrier or to Settle; 0 if none.
	Watermark() int64
}

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrAuthFailed: the engine answered AUTH_FAILED. Fatal configuration
	// error: output.token must equal the EdgeSocket source's token.
	ErrAuthFailed = errors.New("engine refused the token (AUTH_FAILED): output.token must equal the EdgeSocket source's token")
	// ErrDecryptFailed: the engine answered DECRYPT_FAILED. Fatal
	// configuration error: the AES key differs from the source's secret_key.
	ErrDecryptFailed = errors.New("engine could not decrypt the payload (DECRYPT_FAILED): output.aes-secret-key-base64 must equal the EdgeSocket source's secret_key")
	// ErrRejected: the engine answered REJECTED because another collector
	// holds its single ingress. Retry later, slowly (at the maximum backoff).
	ErrRejected = errors.New("engine rejected the connection (REJECTED): another collector holds the EdgeSocket ingress")
	// ErrUnavailable: the engine could not be reached or the connection kept
	// failing for max-reconnect-cycles. Retry later; no attempt is charged
	// for batches that were NotSent.
	ErrUnavailable = errors.New("edgesocket engine unavailable")
	// ErrClosed: Send was called after Close.
	ErrClosed = errors.New("transport closed")
	// ErrProtocol: the engine broke the one-reply-per-request exchange (a
	// reply nothing on the wire could answer, an unexpected auth reply,
	// bytes sent unasked). The session is dropped and what it left
	// unanswered is sent again on a new one; nothing it still owed is
	// charged an attempt. Send wraps it in ErrUnavailable when every
	// session misbehaves.
	ErrProtocol = errors.New("engine broke the EdgeSocket reply protocol")
	// ErrUnsettled: checkpoint delivery, and the session is new: the
	// batches held as received must be settled (Committer.Settle) before
	// any batch is sent on it. Nothing was written; no attempt is charged.
	// Send and Settle also return it, with the batches after it NotSent,
	// when the first batch sent on a session ended Failed: no later id
	// may reach the engine before that one.
	ErrUnsettled = errors.New("edgesocket session not settled: the batches held as received must be asked about before new ones are sent")
)

// IsFatal reports whether err is a configuration error that retrying
// cannot fix, so the agent should stop and tell the operator what to change.
func IsFatal(err error) bool {
	return errors.Is(err, ErrAuthFailed) || errors.Is(err, ErrDecryptFailed)
}

// FieldError is a configuration problem tied to one setting, named by its
// agent.yaml key relative to the output section (e.g. "max-in-flight"), so
// a config layer can add the section and the key's line:column without
// knowing the rule. Messages never quote a token or key.
type FieldError struct {
	Key string
	Err error
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// FieldKey is the key relative to the output section.
func (e *FieldError) FieldKey() string { return e.Key }

// Errorf builds a *FieldError for key.
func Errorf(key, format string, args ...any) error {
	return &FieldError{Key: key, Err: fmt.Errorf(format, args...)}
}
