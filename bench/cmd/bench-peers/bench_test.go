package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// pbField encodes one length-delimited protobuf field.
func pbField(num int, v []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func varintField(num int, v uint64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(num)<<3), v)
}

// request encodes an ExportLogsServiceRequest: resources × scopes of
// records, with unrelated fields between them that the walk must skip.
func request(resources [][][]string) []byte {
	var req []byte
	for _, scopes := range resources {
		rl := pbField(1, []byte("resource"))
		for _, recs := range scopes {
			sl := pbField(1, []byte("scope"))
			for _, r := range recs {
				rec := append(varintField(1, 42), pbField(5, pbField(1, []byte(r)))...)
				rec = append(rec, 0x59, 1, 2, 3, 4, 5, 6, 7, 8) // field 11, fixed64
				sl = append(sl, pbField(2, rec)...)
			}
			sl = append(sl, pbField(3, []byte("schema"))...)
			rl = append(rl, pbField(2, sl)...)
		}
		req = append(req, pbField(1, rl)...)
	}
	return req
}

func TestLogRecords(t *testing.T) {
	tests := []struct {
		name string
		in   [][][]string
		want []string
	}{
		{"empty", nil, nil},
		{"one", [][][]string{{{"a seq=000000001"}}}, []string{"a seq=000000001"}},
		{"nested", [][][]string{{{"r1", "r2"}, {}}, {{"r3"}}}, []string{"r1", "r2", "r3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := logRecords(request(tt.in), func(rec []byte) {
				var body []byte
				if err := eachField(rec, 5, func(v []byte) error {
					return eachField(v, 1, func(s []byte) error { body = s; return nil })
				}); err != nil {
					t.Fatal(err)
				}
				got = append(got, string(body))
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("records %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLogRecordsMalformed(t *testing.T) {
	for _, in := range [][]byte{
		{0x0a},             // field 1 without its length
		{0x0a, 0x05, 0x01}, // length past the end
		{0x0b},             // wire type 3 (group)
		{0x09, 0x01},       // short fixed64
		{0x08, 0xff},       // unterminated varint
	} {
		if err := logRecords(in, func([]byte) {}); err == nil {
			t.Errorf("logRecords(% x) = nil, want an error", in)
		}
	}
}

func FuzzLogRecords(f *testing.F) {
	f.Add(request([][][]string{{{"x seq=000000007"}}}))
	f.Add([]byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x10})
	f.Fuzz(func(t *testing.T, in []byte) {
		total := 0
		err := logRecords(in, func(rec []byte) {
			total += len(rec)
			if !bytes.Contains(in, rec) {
				t.Fatalf("record % x is not a part of the request", rec)
			}
		})
		if err == nil && total > len(in) {
			t.Fatalf("records of %d bytes from a request of %d", total, len(in))
		}
	})
}

func TestParseSeq(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"msg":"served seq=000000042"}`, 42, true},
		{"seq=12 then seq=000000007", 7, true},
		{"seq=00000001", 0, false},
		{"no number", 0, false},
		{"\x12\x05seq=000123456\x00", 123456, true},
	}
	for _, tt := range tests {
		got, ok := parseSeq([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseSeq(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseSeq(f *testing.F) {
	f.Add([]byte("seq=000000001"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if n, ok := parseSeq(in); ok && (n < 0 || n > 999_999_999) {
			t.Fatalf("parseSeq(%q) = %d", in, n)
		}
	})
}

// The generated lines are what the chain is measured on: every one has
// its sequence number, one in six is debug, and the secrets are there.
func TestGenerate(t *testing.T) {
	var b bytes.Buffer
	const n = 120
	size, err := generate(&b, n)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != n || int64(b.Len()) != size {
		t.Fatalf("%d lines, %d bytes (said %d), want %d lines", len(lines), b.Len(), size, n)
	}
	debug, secrets := 0, 0
	for i, l := range lines {
		if seq, ok := parseSeq([]byte(l)); !ok || seq != i {
			t.Fatalf("line %d: seq %d, %v: %s", i, seq, ok, l)
		}
		if len(l)+1 < 170 || len(l)+1 > 230 {
			t.Errorf("line %d is %d bytes: %s", i, len(l)+1, l)
		}
		if strings.Contains(l, `"level":"debug"`) != isDebug(i) {
			t.Errorf("line %d: isDebug %v but %s", i, isDebug(i), l)
		}
		if isDebug(i) {
			debug++
		}
		if strings.Contains(l, secretEmail) || strings.Contains(l, secretCard) {
			secrets++
		}
	}
	if debug != n/6 || secrets != n/10 {
		t.Errorf("%d debug lines, %d with a secret; want %d and %d", debug, secrets, n/6, n/10)
	}
}

// The sink counts a request's records before it answers 200, and a chain
// row's tally tells dropped lines and secrets apart.
func TestOTLPSinkCountsBeforeOK(t *testing.T) {
	tl := newTally(4, func(seq int) bool { return !isDebug(seq) })
	var mu sync.Mutex
	s, err := startOTLPSink(context.Background(), func(rec []byte) { mu.Lock(); defer mu.Unlock(); tl.add(rec) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	body := request([][][]string{{{"seq=000000000", "seq=000000001 " + secretEmail}, {"seq=000000001", "seq=000000003"}}})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/v1/logs", &gz)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	got := tl.counts()
	want := counts{unique: 2, want: 3, dups: 1, leaked: 1, secrets: 1}
	if got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	resp, err = http.Post("http://"+s.addr+"/v1/logs", "application/x-protobuf", strings.NewReader("\x0a\x05"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a malformed request got %s, want 400", resp.Status)
	}
}

func TestParseRow(t *testing.T) {
	for _, name := range []string{"agent-plain", "otel-chain-fsync30", "agent-chain-fsync10"} {
		if _, err := parseRow(name); err != nil {
			t.Errorf("parseRow(%q): %v", name, err)
		}
	}
	for _, name := range []string{"fluentbit-plain", "agent", "otel-chain-fsync3", "agent-dedup"} {
		if _, err := parseRow(name); err == nil {
			t.Errorf("parseRow(%q) = nil error", name)
		}
	}
}

// Every row's config template is in bench/peers and has every
// placeholder runOne fills in, so no row starts a peer on a path of
// another run.
func TestTemplates(t *testing.T) {
	for _, name := range rowNames {
		r, err := parseRow(name)
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(filepath.Join("..", "..", "peers", templateName(r)))
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range []string{"@FILE@", "@WORK@", "@ENDPOINT@"} {
			if !strings.Contains(string(text), ph) {
				t.Errorf("%s: no %s", templateName(r), ph)
			}
		}
	}
}
