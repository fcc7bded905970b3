package main

import (
	"bufio"
	"io"
	"strconv"
	"sync"

	"github.com/edge-agent/edge-agent/transport/console"
)

// sink writes records as NDJSON lines and counts them. It is safe for
// concurrent use: the ingress handler writes while a ticker flushes.
type sink struct {
	mu       sync.Mutex
	w        *bufio.Writer
	envelope bool
	limit    int // records to take; 0 = no limit
	records  int
	seen     map[int64]struct{}
	dups     int
	full     chan struct{} // closed when limit is reached
	line     []byte
	err      error // first write error
}

func newSink(w io.Writer, envelope bool, limit int) *sink {
	return &sink{
		w:        bufio.NewWriterSize(w, 64<<10),
		envelope: envelope,
		limit:    limit,
		seen:     make(map[int64]struct{}),
		full:     make(chan struct{}),
	}
}

// take writes one record; false means the limit was reached before it, so
// the record was not written (the caller must not acknowledge it).
func (s *sink) take(id int64, record []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit > 0 && s.records >= s.limit {
		return false
	}
	s.line = s.line[:0]
	if s.envelope {
		s.line = append(s.line, `{"batch_id":`...)
		s.line = strconv.AppendInt(s.line, id, 10)
		s.line = append(s.line, `,"payload":`...)
		s.line = appendValue(s.line, record)
		s.line = append(s.line, '}')
	} else {
		s.line = appendValue(s.line, record)
	}
	s.line = append(s.line, '\n')
	if _, err := s.w.Write(s.line); err != nil && s.err == nil {
		s.err = err
	}
	s.records++
	if _, dup := s.seen[id]; dup {
		s.dups++
	} else {
		s.seen[id] = struct{}{}
	}
	if s.limit > 0 && s.records == s.limit {
		close(s.full)
	}
	return true
}

// isFull reports whether the limit was reached.
func (s *sink) isFull() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit > 0 && s.records >= s.limit
}

// appendValue appends record as one line's worth of JSON, by the console
// output's rule, so every output line stays one JSON value whatever the
// collector sent (NUL, invalid UTF-8, text).
func appendValue(dst, record []byte) []byte { return console.AppendJSON(dst, record) }

func (s *sink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}

// counts returns records, unique batch ids and duplicates so far.
func (s *sink) counts() (records, unique, dups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records, len(s.seen), s.dups
}
