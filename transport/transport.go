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
