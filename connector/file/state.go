package file

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/jsonenc"
)

// stateVersion is bumped if the State layout changes incompatibly.
const stateVersion = 1

// savedState is the decoded Position.State of one file:
//
//	{"v":1,"path":"/var/log/app.log","dev":2049,"ino":1835012,
//	 "fp_len":1024,"fp":"8c0f3a7d2b9e4c11","offset":73412,"line":815}
//
// path is informational (identity is dev+ino+fingerprint, so a renamed
// file keeps its position); fp is the FNV-1a 64 hash of the first fp_len
// bytes; offset is the byte offset just past the last line delivered;
// line is that line's 1-based number (0 before any line).
type savedState struct {
	V      int    `json:"v"`
	Path   string `json:"path"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	FPLen  int    `json:"fp_len"`
	FP     string `json:"fp"`
	Offset int64  `json:"offset"`
	Line   int64  `json:"line"`

	key string
	sum fingerprint.Sum
}

// id is the identity the position was saved for.
func (s savedState) id() fileID { return fileID{dev: s.Dev, ino: s.Ino} }

func decodeState(key string, b []byte) (savedState, error) {
	var s savedState
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("decode position %q: %w", key, err)
	}
	if s.V != stateVersion {
		return s, fmt.Errorf("decode position %q: unsupported version %d", key, s.V)
	}
	h, err := strconv.ParseUint(s.FP, 16, 64)
	if err != nil || s.FPLen < 0 || s.Offset < 0 || s.Line < 0 {
		return s, fmt.Errorf("decode position %q: malformed fingerprint or offset", key)
	}
	s.key = key
	s.sum = fingerprint.Sum{Len: s.FPLen, Hash: h}
	return s, nil
}

// stateHeadFixed bounds what appendStateHead adds beside the path.
const stateHeadFixed = 128

// appendStateHead appends the constant part of a file's State up to the
// offset; it changes only when the path or the fingerprint changes, so
// per-event state costs two integer appends. pathJSON is the path as a
// JSON string.
func appendStateHead(dst []byte, id fileID, pathJSON []byte, sum fingerprint.Sum) []byte {
	dst = append(dst, `{"v":1,"path":`...)
	dst = append(dst, pathJSON...)
	dst = append(dst, `,"dev":`...)
	dst = jsonenc.AppendUint(dst, id.dev)
	dst = append(dst, `,"ino":`...)
	dst = jsonenc.AppendUint(dst, id.ino)
	dst = append(dst, `,"fp_len":`...)
	dst = jsonenc.AppendInt(dst, int64(sum.Len))
	dst = append(dst, `,"fp":"`...)
	dst = jsonenc.AppendHex64(dst, sum.Hash)
	return append(dst, `","offset":`...)
}

func appendStateTail(dst []byte, offset, line int64) []byte {
	dst = jsonenc.AppendInt(dst, offset)
	dst = append(dst, `,"line":`...)
	dst = jsonenc.AppendInt(dst, line)
	return append(dst, '}')
}
