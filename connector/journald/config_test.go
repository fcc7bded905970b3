package journald

import (
	"errors"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		keys []string // keys of the *input.FieldError values, in order
	}{
		{"defaults", func(*Config) {}, nil},
		{"everything valid", func(c *Config) {
			c.Units, c.UserUnits, c.Matches = []string{"a.service", "b*"}, []string{"u.service"}, []string{"_PID=1", "+", "SYSLOG_IDENTIFIER=x"}
			c.Priority, c.IncludeFields, c.ExcludeFields = "warning", []string{"_PID"}, []string{"_CMDLINE"}
			c.Multiline.Pattern, c.IncludeLines = `^\s`, []string{"x"}
		}, nil},
		{"bad values", func(c *Config) {
			c.Units = []string{" "}
			c.Matches = []string{"lower=x", "NOEQUALS"}
			c.Priority = "loud"
			c.IncludeFields = []string{"bad-name"}
			c.Directory, c.Files = "/d", []string{"/f.journal"}
			c.MaxMessageBytes = 1
			c.HangTimeout = 0
			c.RestartBackoff, c.RestartBackoffMax = 10_000_000_000, 1_000_000_000
			c.Multiline.MaxLines = 0
			c.ExcludeLines = []string{"("}
		}, []string{"units[0]", "matches[0]", "matches[1]", "include-fields[0]", "priority", "files", "max-message-bytes",
			"hang-timeout-ms", "restart-backoff-max-ms", "multiline.max-lines", "exclude-lines[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewDefaultConfig()
			tc.mod(c)
			err := c.Validate()
			var keys []string
			for _, e := range unjoin(err) {
				var fe *input.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("%v is not a FieldError", e)
				}
				keys = append(keys, fe.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tc.keys, ",") {
				t.Fatalf("keys %v, want %v (%v)", keys, tc.keys, err)
			}
		})
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestPriorityLevel(t *testing.T) {
	for in, want := range map[string]int{"": -1, "0": 0, "7": 7, "err": 3, "Warning": 4, "debug": 7} {
		if got, err := priorityLevel(in); err != nil || got != want {
			t.Errorf("priorityLevel(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := priorityLevel("8"); err == nil {
		t.Error("8 accepted")
	}
}

func TestJournalctlArgs(t *testing.T) {
	c := NewDefaultConfig()
	c.Files = []string{"/j/a.journal"}
	c.Units, c.UserUnits, c.Priority, c.Matches = []string{"a.service"}, []string{"u.service"}, "err", []string{"_PID=1"}
	f := &follower{src: sourceArgs(c), filters: filterArgs(c), since: "-1h"}
	for _, tc := range []struct {
		at   string
		mode startMode
		want string
	}{
		{"s=1", fromHead, "--cursor=s=1 "},
		{"", fromHead, ""},
		{"", fromSince, "--since=-1h "},
	} {
		got := strings.Join(f.followArgs(tc.at, tc.mode), " ")
		want := "--output=export --no-pager --quiet --file=/j/a.journal --follow --no-tail " + tc.want + "--unit=a.service --user-unit=u.service --priority=3 _PID=1"
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	if got := sinceArg(1_700_000_000_000_042); got != "@1700000000.000042" {
		t.Errorf("sinceArg %s", got)
	}
}
