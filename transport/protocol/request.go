package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadBatchID reports a batch id <= 0 given to a request builder. The
// message matches the Java agent's.
var ErrBadBatchID = errors.New("batchId must be positive")

// ErrLineBreak reports a token or payload holding '\n' or '\r', which would
// split the request into two lines and desynchronise the exchange.
var ErrLineBreak = errors.New("contains a line break")

// AppendAuth appends "__AUTH__:<token>\n" to dst. The token must not hold a
// line break (check it once with CheckToken when it is configured).
func AppendAuth(dst []byte, token string) []byte {
	dst = append(dst, PrefixAuth...)
	dst = append(dst, token...)
	return append(dst, '\n')
}

// AppendBatch appends "__BATCH__:<id>:<payload>\n" to dst. It fails without
// touching dst when id <= 0 or the payload holds a line break.
func AppendBatch(dst []byte, id int64, payload []byte) ([]byte, error) {
	if err := CheckBatch(id, payload); err != nil {
		return dst, err
	}
	return AppendCheckedBatch(dst, id, payload), nil
}

// CheckBatch fails when id <= 0 (ErrBadBatchID) or the payload holds a line
// break (ErrLineBreak): what AppendBatch refuses.
func CheckBatch(id int64, payload []byte) error {
	if id <= 0 {
		return fmt.Errorf("batch %d: %w", id, ErrBadBatchID)
	}
	if err := CheckLine(payload); err != nil {
		return fmt.Errorf("batch %d: payload %w", id, err)
	}
	return nil
}

// AppendCheckedBatch is AppendBatch for a batch CheckBatch has accepted:
// a sender that checks every batch once, when it is handed over, need not
// scan each payload again every time it is written (resends included).
func AppendCheckedBatch(dst []byte, id int64, payload []byte) []byte {
	dst = append(dst, PrefixBatch...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, ':')
	dst = append(dst, payload...)
	return append(dst, '\n')
}

// AppendCommit appends "__COMMIT__:<id>\n" to dst: a commit barrier, a
// settle or a poll of the client (CHECKPOINT delivery asks it which ids a
// completed checkpoint covers).
func AppendCommit(dst []byte, id int64) ([]byte, error) {
	if id <= 0 {
		return dst, fmt.Errorf("commit %d: %w", id, ErrBadBatchID)
	}
	dst = append(dst, PrefixCommit...)
	dst = strconv.AppendInt(dst, id, 10)
	return append(dst, '\n'), nil
}

// CheckLine fails with ErrLineBreak when b holds '\n' or '\r'.
func CheckLine(b []byte) error {
	if bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0 {
		return ErrLineBreak
	}
	return nil
}

// CheckToken fails when a token is empty or holds a line break.
func CheckToken(token string) error {
	if token == "" {
		return errors.New("token is empty")
	}
	if strings.ContainsAny(token, "\r\n") {
		return fmt.Errorf("token %w", ErrLineBreak)
	}
	return nil
}
