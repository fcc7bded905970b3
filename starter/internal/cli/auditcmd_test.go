package cli

import (
	"strings"
	"testing"
)

func TestAuditCommand(t *testing.T) {
	complete := `{"batch_id":1,"payload":{"payload":"a","_input":"app","_seq":1}}
{"batch_id":2,"payload":{"_gap":true,"_input":"app","_host":"h","_agent_id":"x","reason":"dropped: queue full","count":2,"first_seq":2,"last_seq":3,"_ts":1}}
{"batch_id":3,"payload":"{\"payload\":\"d\",\"_input\":\"app\",\"_seq\":4}"}
{"batch_id":3,"payload":"{\"payload\":\"d\",\"_input\":\"app\",\"_seq\":4}"}
`
	for _, tc := range []struct {
		name, in string
		args     []string
		code     int
		want     string
	}{
		{"complete, a duplicate counted", complete, nil, 0,
			"host - input app: complete: seq 1..4: 3 rows, 2 in 1 gap records, 1 duplicates\n"},
		{"a hole", complete + `{"payload":"z","_input":"app","_seq":9}` + "\n", nil, 1,
			"host - input app: INCOMPLETE: seq 1..9: 4 rows, 2 in 1 gap records, 1 duplicates\n  missing 4: 5..8\n"},
		{"bytes never read, counted apart", complete + `{"_gap":true,"_input":"app","_host":"h","_agent_id":"x","reason":"gone-unread","count":0,"file":"/l/a.log.1","offsets":[10,4914],"bytes":4904,"_ts":2}` + "\n", nil, 0,
			"host - input app: complete: seq 1..4: 3 rows, 2 in 1 gap records, 1 duplicates, 4904 bytes never read (1 records: files gone before they were read)\n"},
		{"json", complete, []string{"--json"}, 0, `"missing":`},
		{"nothing stamped", `{"payload":"x"}` + "\n", nil, 0, "nothing to check (is agent.account on?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			f := e.write("rows.ndjson", tc.in)
			code := e.run(append(append([]string{"audit"}, tc.args...), f)...)
			if tc.name == "json" {
				// An OK report has no missing member and says ok.
				if code != tc.code || strings.Contains(e.stdout.String(), tc.want) || !strings.Contains(e.stdout.String(), `"ok":true`) {
					t.Fatalf("exit %d, stdout %s", code, e.stdout.String())
				}
				return
			}
			if code != tc.code || !strings.Contains(e.stdout.String(), tc.want) {
				t.Fatalf("exit %d (want %d), stdout:\n%s\nwant it to contain:\n%s\nstderr: %s", code, tc.code, e.stdout.String(), tc.want, e.stderr.String())
			}
		})
	}
	e := newTestEnv(t)
	if code := e.run("audit"); code != 64 {
		t.Errorf("audit without FILE: exit %d, want 64", code)
	}
	if code := e.run("audit", e.home+"/absent.ndjson"); code != 1 || !strings.Contains(e.stderr.String(), "absent.ndjson") {
		t.Errorf("audit of a missing file: exit %d, %s", code, e.stderr.String())
	}
	e.stdin = complete
	if code := e.run("audit", "-"); code != 0 {
		t.Errorf("audit -: exit %d %s", code, e.stdout.String())
	}
}
