package protocol

import (
	"bytes"
	"fmt"
	"strconv"
)

// Kind says which command a request line holds.
type Kind int

// Request kinds.
const (
	KindUnknown Kind = iota
	KindAuth
	KindBatch
	KindCommit
)

// Request is a parsed request line, as an ingress sees it.
type Request struct {
	Kind Kind
	// BatchID is the id of a __BATCH__ or __COMMIT__ request (> 0).
	BatchID int64
	// Payload is the rest of a __BATCH__ line after "<id>:", which may
	// itself hold ':'. For __AUTH__ it is the token. It aliases the line.
	Payload []byte
}

// RequestError is a request the engine would refuse. Reply is the line to
// answer with: BAD_REQUEST or INVALID_PARAM. Reason never holds a byte
// of the line, only its shape (which command, lengths): a client may put
// a secret anywhere in a line, and Reason ends up in status and logs.
type RequestError struct {
	Reply  string
	Reason string
}

func (e *RequestError) Error() string { return e.Reply + ": " + e.Reason }

// ParseRequest parses one request line the way the EdgeSocket engine
// dispatches it:
//
//   - "__BATCH__:<id>:<payload>": the separator is the first ':' after the
//     id; none gives BAD_REQUEST; an id that is not a decimal int64 or is
//     <= 0 gives INVALID_PARAM. The payload may be empty or hold ':'.
//   - "__COMMIT__:<id>": a bad or <= 0 id gives INVALID_PARAM.
//   - "__AUTH__:<token>": KindAuth (an authenticated session must answer
//     it with BAD_REQUEST, as the engine does).
//   - anything else: BAD_REQUEST.
//
// The line is taken as given: callers strip the terminator, not spaces.
// Payload aliases line.
func ParseRequest(line []byte) (Request, error) {
	switch {
	case bytes.HasPrefix(line, []byte(PrefixBatch)):
		rest := line[len(PrefixBatch):]
		idText, payload, ok := bytes.Cut(rest, []byte{':'})
		if !ok {
			return Request{}, &RequestError{ReplyBadRequest, fmt.Sprintf("batch line of %d bytes has no ':' between id and payload", len(line))}
		}
		id, err := parseID("batch", idText)
		if err != nil {
			return Request{}, err
		}
		return Request{Kind: KindBatch, BatchID: id, Payload: payload}, nil
	case bytes.HasPrefix(line, []byte(PrefixCommit)):
		id, err := parseID("commit", line[len(PrefixCommit):])
		if err != nil {
			return Request{}, err
		}
		return Request{Kind: KindCommit, BatchID: id}, nil
	case bytes.HasPrefix(line, []byte(PrefixAuth)):
		return Request{Kind: KindAuth, Payload: line[len(PrefixAuth):]}, nil
	}
	return Request{}, &RequestError{ReplyBadRequest, fmt.Sprintf("unknown command: a line of %d bytes with no known prefix", len(line))}
}

// parseID reads a batch id like Java's Long.parseLong (optional sign,
// decimal digits) and requires it to be > 0. kind names the command in
// the error, which does not quote the id (it may be anything).
func parseID(kind string, b []byte) (int64, error) {
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, &RequestError{ReplyInvalidParam, fmt.Sprintf("%s id of %d bytes is not a decimal int64", kind, len(b))}
	}
	if id <= 0 {
		return 0, &RequestError{ReplyInvalidParam, kind + " id is not positive"}
	}
	return id, nil
}
