package file

import (
	"reflect"
	"testing"
)

func TestAnchorPaths(t *testing.T) {
	c := NewDefaultConfig()
	c.Paths = []string{"logs/**/*.log", "/var/log/app.log", " "}
	c.Exclude = []string{"logs/old/*", "/abs/*.gz", "*.gz"}
	c.AnchorPaths("/opt/edge-agent")
	if want := []string{"/opt/edge-agent/logs/**/*.log", "/var/log/app.log", " "}; !reflect.DeepEqual(c.Paths, want) {
		t.Errorf("paths = %q, want %q", c.Paths, want)
	}
	// A base-name pattern matches anywhere (CompileExclude): anchoring it
	// would make it match only directly under the install root.
	if want := []string{"/opt/edge-agent/logs/old/*", "/abs/*.gz", "*.gz"}; !reflect.DeepEqual(c.Exclude, want) {
		t.Errorf("exclude = %q, want %q", c.Exclude, want)
	}
	c.AnchorPaths("")
	if c.Paths[0] != "/opt/edge-agent/logs/**/*.log" {
		t.Errorf("empty base changed paths: %q", c.Paths)
	}
}
