package file

import (
	"testing"

	"go.uber.org/goleak"
)

// The watcher starts goroutines; every test must leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
