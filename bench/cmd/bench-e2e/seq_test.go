package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

func TestParseSeq(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"1764 INFO [db] seq=000000042 request served", 42, true},
		{`{"payload":"{\"ts\":1,\"seq\":\"000123456\",\"msg\":\"x\"}"}`, 123456, true},
		{`{"seq":"999999999"}`, 999999999, true},
		{"sequence of words seq=000000007", 7, true}, // "seq" inside a word is skipped
		{"seq=12345", 0, false},                      // too short
		{"seq 000000001", 0, false},                  // no separator
		{"no number here", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseSeq([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseSeq(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// Every generated line carries its own number, found both in the line and
// in the line embedded, escaped, in a JSON string as the agent sends it;
// sizes stay within 170..230 bytes.
func TestGeneratedLinesCarryTheirSequence(t *testing.T) {
	var buf bytes.Buffer
	const n = 5000
	total, err := generate(&buf, n, 1, false)
	if err != nil || total != int64(buf.Len()) {
		t.Fatalf("generate = %d, %v; wrote %d", total, err, buf.Len())
	}
	sc := bufio.NewScanner(&buf)
	i, jsonLines := 0, 0
	for sc.Scan() {
		line := sc.Bytes()
		if l := len(line) + 1; l < 170 || l > 230 {
			t.Fatalf("line %d is %d bytes", i, l)
		}
		if json.Valid(line) {
			jsonLines++
		}
		embedded, _ := json.Marshal(map[string]string{"payload": string(line)})
		for _, rec := range [][]byte{line, embedded} {
			if got, ok := parseSeq(rec); !ok || got != i {
				t.Fatalf("line %d: parseSeq = %d, %v in %s", i, got, ok, rec)
			}
		}
		i++
	}
	if i != n || jsonLines < n/5 || jsonLines > n/2 {
		t.Fatalf("%d lines, %d of them JSON", i, jsonLines)
	}
}

func TestTallyCountsUniqueAndDuplicates(t *testing.T) {
	tl := newTally(3)
	for _, s := range []string{"seq=000000000", "seq=000000001", "seq=000000001", "junk", "seq=000000009", "seq=000000002"} {
		tl.add([]byte(s))
	}
	if u, d, b := tl.counts(); u != 3 || d != 1 || b != 2 {
		t.Fatalf("unique %d dups %d bad %d, want 3 1 2", u, d, b)
	}
	select {
	case <-tl.done:
	default:
		t.Fatal("done not closed once every number came")
	}
}

func FuzzParseSeq(f *testing.F) {
	for _, s := range []string{"seq=000000042", `seq\":\"000000001`, "seqseq=", "seq=99999999", "\x00seq=\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		n, ok := parseSeq(rec)
		if ok && (n < 0 || n > 999_999_999) {
			t.Fatalf("parseSeq(%q) = %d", rec, n)
		}
		if !ok && n != 0 {
			t.Fatalf("parseSeq(%q) = %d without ok", rec, n)
		}
	})
}
