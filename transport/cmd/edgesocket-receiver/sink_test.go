package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// Every NDJSON line parses, in both formats, whatever bytes the collector
// sent as records.
func TestSinkLinesParseWhateverTheRecord(t *testing.T) {
	records := []string{"a\x00b", "\xff\xfe", "\xed\xa0\x80", "{\"s\":\"\xff\"}", `{"s":"\ud800"}`, "", "text", `{"ok":1}`}
	for _, envelope := range []bool{false, true} {
		var out bytes.Buffer
		s := newSink(&out, envelope, 0)
		for i, r := range records {
			if !s.take(int64(i+1), []byte(r)) {
				t.Fatal("sink refused a record")
			}
		}
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&out)
		n := 0
		for ; sc.Scan(); n++ {
			if line := sc.Bytes(); !utf8.Valid(line) || !json.Valid(line) {
				t.Errorf("envelope=%v record %q: line %q is not valid JSON", envelope, records[n], line)
			}
		}
		if n != len(records) {
			t.Fatalf("envelope=%v: %d lines for %d records", envelope, n, len(records))
		}
	}
}
