package protocol

import (
	"bytes"
	"strconv"
	"time"
)

// Code classifies a reply line.
type Code int

// Reply codes. CodeUnknown covers every line that is none of the others.
const (
	CodeUnknown Code = iota
	CodeACK
	CodeReceived
	CodeRetry
	CodeQueueFull
	CodeDecryptFailed
	CodeDecodeFailed
	CodeAuthFailed
	CodeRejected
	CodeBadRequest
	CodeInvalidParam
	CodePending
	CodeResend
)

var codeWords = [...]string{
	CodeUnknown:       "UNKNOWN",
	CodeACK:           ReplyACK,
	CodeReceived:      ReplyReceived,
	CodeRetry:         ReplyRetry,
	CodeQueueFull:     ReplyQueueFull,
	CodeDecryptFailed: ReplyDecryptFailed,
	CodeDecodeFailed:  ReplyDecodeFailed,
	CodeAuthFailed:    ReplyAuthFailed,
	CodeRejected:      ReplyRejected,
	CodeBadRequest:    ReplyBadRequest,
	CodeInvalidParam:  ReplyInvalidParam,
	CodePending:       ReplyPending,
	CodeResend:        ReplyResend,
}

// String returns the reply word ("RECEIVED"), or "UNKNOWN".
func (c Code) String() string {
	if c < 0 || int(c) >= len(codeWords) {
		return codeWords[CodeUnknown]
	}
	return codeWords[c]
}

// Reply is a parsed reply line.
type Reply struct {
	Code Code
	// Delay is the wait a QUEUE_FULL reply asks for, already defaulted
	// (500 ms) and capped (MaxQueueFullDelayMillis). Zero for other codes.
	Delay time.Duration
	// Value is the text after "CODE:" for ACK:<watermark> and
	// QUEUE_FULL:<ms>; empty otherwise.
	Value string
	// Line is the trimmed reply line, truncated to 128 bytes so it can go
	// into error messages and logs without flooding them.
	Line string
}

// maxQuotedReply bounds Reply.Line.
const maxQuotedReply = 128

// ParseReply classifies one reply line. It trims the line first, so
// "  ACK\r" parses as ACK. It never fails: a line that is no known reply,
// including an empty one, has CodeUnknown.
//
// "QUEUE_FULL:<ms>" yields Delay=<ms>; a missing, non-numeric or <= 0 value
// means 500 ms, as in the Java agent. A bare "QUEUE_FULL" is read the same
// way. "ACK:<watermark>" (a __COMMIT__ answer) parses as CodeACK with Value.
func ParseReply(line []byte) Reply {
	line = Trim(line)
	word, value, hasValue := bytes.Cut(line, []byte{':'})
	switch string(word) {
	case ReplyQueueFull:
		return Reply{Code: CodeQueueFull, Value: string(value), Delay: queueFullDelay(value), Line: quote(line)}
	case ReplyACK:
		if hasValue {
			return Reply{Code: CodeACK, Value: string(value), Line: quote(line)}
		}
	}
	if !hasValue { // only QUEUE_FULL and ACK carry a value
		for c := CodeACK; int(c) < len(codeWords); c++ {
			if codeWords[c] == string(word) {
				// The constant, not a copy: replies are parsed at the
				// batch rate and must not allocate.
				return Reply{Code: c, Line: codeWords[c]}
			}
		}
	}
	return Reply{Code: CodeUnknown, Line: quote(line)}
}

func queueFullDelay(v []byte) time.Duration {
	ms, err := strconv.ParseInt(string(Trim(v)), 10, 64)
	if err != nil || ms <= 0 {
		ms = DefaultQueueFullDelayMillis
	}
	ms = min(ms, MaxQueueFullDelayMillis)
	return time.Duration(ms) * time.Millisecond
}

func quote(b []byte) string {
	if len(b) > maxQuotedReply {
		return string(b[:maxQuotedReply]) + "..."
	}
	return string(b)
}

// QueueFull formats a "QUEUE_FULL:<ms>" reply.
func QueueFull(d time.Duration) string {
	return QueueFullPrefix + strconv.FormatInt(d.Milliseconds(), 10)
}
