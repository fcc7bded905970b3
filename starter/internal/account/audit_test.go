package account

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func row(input string, seq uint64, host string) string {
	h := ""
	if host != "" {
		h = fmt.Sprintf(`,"_host":%q`, host)
	}
	return fmt.Sprintf(`{"payload":"x"%s,"_input":%q,"_seq":%d}`, h, input, seq)
}

func gap(input string, lo, hi uint64, count int64) string {
	return string(Record{Input: input, Host: "h1", AgentID: "a", Reason: "dropped: queue full", Count: count, FirstSeq: lo, LastSeq: hi}.Marshal())
}

func TestAudit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []Stream
		ok    bool
	}{
		{"rows and a gap cover 1..5",
			[]string{row("a", 1, ""), gap("a", 2, 4, 3), row("a", 5, "")},
			[]Stream{{Input: "a", Max: 5, Rows: 2, GapRecords: 1, GapRows: 3}}, true},
		{"bytes never read are counted apart, outside the range",
			[]string{row("a", 1, ""), string(Record{Input: "a", Host: "h1", Reason: "gone-unread", File: "/l/a.log.1",
				Offsets: &[2]int64{10, 60}, Bytes: 50}.Marshal()), row("a", 2, "")},
			[]Stream{{Input: "a", Max: 2, Rows: 2, LossRecords: 1, UnreadBytes: 50}}, true},
		{"a hole and a duplicate",
			[]string{row("a", 1, ""), row("a", 1, ""), row("a", 4, ""), row("a", 7, "")},
			[]Stream{{Input: "a", Max: 7, Rows: 4, Duplicates: 1, Missing: [][2]uint64{{2, 3}, {5, 6}}}}, false},
		{"a row inside a gap range is a duplicate",
			[]string{gap("a", 1, 3, 3), row("a", 2, "")},
			[]Stream{{Input: "a", Max: 3, Rows: 1, GapRecords: 1, GapRows: 3, Duplicates: 1}}, true},
		{"gap records follow their rows' hosts",
			[]string{row("a", 1, "h1"), gap("a", 2, 2, 1), row("a", 1, "h2"), row("b", 1, ""), gap("b", 2, 2, 1)},
			[]Stream{{Input: "b", Max: 2, Rows: 1, GapRecords: 1, GapRows: 1},
				{Host: "h1", Input: "a", Max: 2, Rows: 1, GapRecords: 1, GapRows: 1},
				{Host: "h2", Input: "a", Max: 1, Rows: 1}}, true},
		{"a count that disagrees with the range",
			[]string{gap("a", 1, 3, 2)},
			[]Stream{{Input: "a", BadRecords: 1}}, false},
		{"count-only records cover nothing",
			[]string{row("a", 1, ""), gap("a", 0, 0, 4)},
			[]Stream{{Input: "a", Max: 1, Rows: 1, CountOnly: 4}}, true},
		{"envelopes, payload strings, stand-ins",
			[]string{`{"batch_id":1,"payload":` + row("a", 1, "") + `}`,
				fmt.Sprintf(`{"batch_id":2,"payload":%q}`, row("a", 2, "")),
				`{"edge_agent_gap":{"batch_id":3,"source":"a","reason":"purged","created_ms":1}}`},
			[]Stream{{Input: "a", Max: 2, Rows: 2}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Audit(strings.NewReader(strings.Join(tc.lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(rep.Streams, tc.want, func(a, b Stream) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) || rep.OK() != tc.ok {
				t.Errorf("streams %+v ok %v\nwant    %+v ok %v", rep.Streams, rep.OK(), tc.want, tc.ok)
			}
			if rep.Unstamped != 0 || rep.Unreadable != 0 {
				t.Errorf("unstamped %d, unreadable %d", rep.Unstamped, rep.Unreadable)
			}
		})
	}
}

func TestAuditCountsWhatItCannotCheck(t *testing.T) {
	rep, err := Audit(strings.NewReader("{\"payload\":\"old row\"}\nnot json\n\n" + `{"batch_id":1,"payload":"plain"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != 3 || rep.Unreadable != 1 || rep.Unstamped != 2 || len(rep.Streams) != 0 || !rep.OK() {
		t.Errorf("%+v", rep)
	}
}

func FuzzAudit(f *testing.F) {
	f.Add([]byte(row("a", 1, "") + "\n" + gap("a", 2, 9, 8) + "\n"))
	f.Add([]byte(`{"payload":"{\"_seq\":1,\"_input\":\"x\"}"}`))
	f.Add([]byte(`[[[[{"_gap":true,"first_seq":18446744073709551615,"last_seq":1,"count":-1}]]]]`))
	f.Add([]byte(`{"_gap":true,"_input":"a","reason":"gone-unread","count":0,"offsets":[10,5],"bytes":-3}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := Audit(strings.NewReader(string(in)))
		if err != nil {
			return
		}
		for _, s := range rep.Streams {
			var prev uint64
			for _, m := range s.Missing {
				if m[0] > m[1] || m[0] <= prev || m[1] >= s.Max {
					t.Fatalf("missing %v of max %d out of order or range", s.Missing, s.Max)
				}
				prev = m[1]
			}
		}
	})
}
