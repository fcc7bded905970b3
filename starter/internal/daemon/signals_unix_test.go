//go:build !windows

package daemon

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// SIGHUP reloads and neither stops nor kills; the first SIGINT cancels the
// run; the second forces an exit after cleaning up. Signals go to this
// test process, which has them captured.
func TestSignals(t *testing.T) {
	exited := make(chan int, 1)
	cleaned := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	reloaded := make(chan struct{}, 2)
	stop := handleSignals(logger, cancel, func() { reloaded <- struct{}{} }, func() { cleaned <- struct{}{} }, func(code int) { exited <- code })
	defer stop()

	for range 2 {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-reloaded:
		case <-time.After(5 * time.Second):
			t.Fatal("SIGHUP did not reload")
		}
	}
	if ctx.Err() != nil {
		t.Fatal("SIGHUP cancelled the run")
	}
	select {
	case code := <-exited:
		t.Fatalf("SIGHUP forced an exit (%d)", code)
	default:
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("first signal did not cancel the run")
	}
	select {
	case code := <-exited:
		t.Fatalf("first signal forced an exit (%d)", code)
	default:
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != exitcode.Failure {
			t.Errorf("forced exit code %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second signal did not force an exit")
	}
	select {
	case <-cleaned:
	default:
		t.Error("forced exit skipped the pid file cleanup")
	}
}
