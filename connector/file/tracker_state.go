package file

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/tracker"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// stateVersion is bumped if the State layout changes incompatibly.
const stateVersion = 1

// savedState is the decoded Position.State of one file:
//
//	{"v":1,"path":"/var/log/app.log","dev":2049,"ino":1835012,
//	 "fp_len":1024,"fp":"8c0f3a7d2b9e4c11",
//	 "prev":{"fp_len":1024,"fp":"51d2e0a9c3b87f04","offset":912,"line":12},
//	 "offset":73412,"line":815,"size":73500}
//
// path is informational (identity is dev+ino+fingerprint, so a renamed
// file keeps its position); fp is the FNV-1a 64 hash of the first fp_len
// bytes; offset is the byte offset just past the last line delivered;
// line is that line's 1-based number (0 before any line); size is the
// file's size as known when the position was taken (a lower bound of
// what it held: the bytes beyond offset are reported lost if the file is
// gone at the next start). prev, present only for a scan or two after a
// truncation, is the content the file held before it (its fingerprint
// and how far it was delivered), so that its copy (copytruncate) found
// after a restart continues from there as it would have without one.
type savedState struct {
	V      int         `json:"v"`
	Path   string      `json:"path"`
	Dev    uint64      `json:"dev"`
	Ino    uint64      `json:"ino"`
	FPLen  int         `json:"fp_len"`
	FP     string      `json:"fp"`
	Prev   *savedPrior `json:"prev,omitempty"`
	Offset int64       `json:"offset"`
	Line   int64       `json:"line"`
	Size   int64       `json:"size"`

	key   string
	sum   fingerprint.Sum
	prior *tracker.Content
}

// savedPrior is the "prev" of a savedState.
type savedPrior struct {
	FPLen  int    `json:"fp_len"`
	FP     string `json:"fp"`
	Offset int64  `json:"offset"`
	Line   int64  `json:"line"`
}

// patternsKey is the position key under which the input records the
// path patterns its positions were taken under. File keys are
// "dev:inode:fingerprint", so it cannot name a file.
const patternsKey = "patterns"

// savedPatterns is the State saved under patternsKey:
//
//	{"v":1,"patterns":["/var/log/app/*.log"]}
//
// A pattern missing from it at start is new since the last run: with
// read-from-beginning false, the files it matches then are tailed.
type savedPatterns struct {
	V        int      `json:"v"`
	Patterns []string `json:"patterns"`
}

func decodePatterns(b []byte) (map[string]struct{}, error) {
	var s savedPatterns
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode position %q: %w", patternsKey, err)
	}
	if s.V != stateVersion {
		return nil, fmt.Errorf("decode position %q: unsupported version %d", patternsKey, s.V)
	}
	set := make(map[string]struct{}, len(s.Patterns))
	for _, p := range s.Patterns {
		set[p] = struct{}{}
	}
	return set, nil
}

func encodePatterns(pats []string) []byte {
	b, _ := json.Marshal(savedPatterns{V: stateVersion, Patterns: pats})
	return b
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
	if err != nil || s.FPLen < 0 || s.Offset < 0 || s.Line < 0 || s.Size < 0 {
		return s, fmt.Errorf("decode position %q: malformed fingerprint or offset", key)
	}
	s.key = key
	s.sum = fingerprint.Sum{Len: s.FPLen, Hash: h}
	if p := s.Prev; p != nil {
		ph, err := strconv.ParseUint(p.FP, 16, 64)
		if err != nil || p.FPLen <= 0 || p.Offset < 0 || p.Line < 0 {
			return s, fmt.Errorf("decode position %q: malformed prev", key)
		}
		s.prior = &tracker.Content{Sum: fingerprint.Sum{Len: p.FPLen, Hash: ph}, Offset: p.Offset, Line: p.Line}
	}
	return s, nil
}

// saved is s as the tracker keeps it.
func (s savedState) saved() saved {
	return saved{Key: s.key, ID: s.id(), Path: s.Path, Size: s.Size, Prev: s.prior,
		Content: tracker.Content{Sum: s.sum, Offset: s.Offset, Line: s.Line}}
}

// saved is a position restored at Open that no file has claimed yet.
type saved = tracker.Saved[fileID]

// asPrior is the content s was saved for, as a copy source: its file was
// truncated or rewritten while the agent was stopped.
func asPrior(s saved) *prior { return &prior{Content: s.Content} }

// stateHeadFixed bounds what appendStateHead adds beside the path.
const stateHeadFixed = 224

// appendStateHead appends the constant part of a file's State up to the
// offset; it changes only when the path or the fingerprint changes, so
// per-event state costs two integer appends. pathJSON is the path as a
// JSON string.
func appendStateHead(dst []byte, id fileID, pathJSON []byte, sum fingerprint.Sum, p *tracker.Content) []byte {
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
	if p != nil {
		dst = append(dst, `","prev":{"fp_len":`...)
		dst = jsonenc.AppendInt(dst, int64(p.Sum.Len))
		dst = append(dst, `,"fp":"`...)
		dst = jsonenc.AppendHex64(dst, p.Sum.Hash)
		dst = append(dst, `","offset":`...)
		dst = jsonenc.AppendInt(dst, p.Offset)
		dst = append(dst, `,"line":`...)
		dst = jsonenc.AppendInt(dst, p.Line)
		return append(dst, `},"offset":`...)
	}
	return append(dst, `","offset":`...)
}

func appendStateTail(dst []byte, offset, line, size int64) []byte {
	dst = jsonenc.AppendInt(dst, offset)
	dst = append(dst, `,"line":`...)
	dst = jsonenc.AppendInt(dst, line)
	dst = append(dst, `,"size":`...)
	dst = jsonenc.AppendInt(dst, size)
	return append(dst, '}')
}
