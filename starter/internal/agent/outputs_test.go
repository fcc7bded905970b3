package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

func TestNewNeedsAnOutput(t *testing.T) {
	opts := newOptions(t, testConfig(t), t.TempDir(), &fakeInput{}, newFakeSender(nil))
	opts.Outputs = nil
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "no output registry") {
		t.Errorf("New without Outputs = %v", err)
	}
	cfg := testConfig(t)
	cfg.Output.Options = nil
	if _, err := New(newOptions(t, cfg, t.TempDir(), &fakeInput{}, newFakeSender(nil))); !errors.Is(err, check.ErrInvalid) {
		t.Errorf("New without output options = %v", err)
	}
}

// The factory's own check runs before anything is sent, and the error
// names the output.
func TestOutputSetUpFailureStopsStart(t *testing.T) {
	cfg := transportConfig(t, "127.0.0.1:1")
	clientOptions(t, cfg).MaxInFlight = 0
	rt, err := New(newOptions(t, cfg, t.TempDir(), &fakeInput{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = rt.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "set up output transport") || !strings.Contains(err.Error(), "max-in-flight") {
		t.Fatalf("Run = %v", err)
	}
	cfg.Output.Type = "kafka"
	rt, err = New(newOptions(t, cfg, t.TempDir(), &fakeInput{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); !errors.Is(err, output.ErrUnknownType) {
		t.Fatalf("Run with an unknown output = %v", err)
	}
}

// Jobs keep the output's pipeline full: output.max-in-flight reaches the
// scheduler through the output's Pacing, not a copy of the setting.
func TestJobSizeFollowsMaxInFlight(t *testing.T) {
	cfg := testConfig(t)
	cfg.Queue.PollBatchSize, cfg.Agent.BulkMaxSize = 1, 1
	clientOptions(t, cfg).MaxInFlight = 200
	if got := jobSize(newOptions(t, cfg, "", nil, nil)); got != 800 {
		t.Errorf("jobSize = %d, want 4 × max-in-flight = 800", got)
	}
	clientOptions(t, cfg).MaxInFlight = 1
	if got := jobSize(newOptions(t, cfg, "", nil, nil)); got != 4 {
		t.Errorf("jobSize = %d, want 4", got)
	}
	// Capped at the default window: bigger claims cost the WAL more.
	clientOptions(t, cfg).MaxInFlight = 4096
	if got := jobSize(newOptions(t, cfg, "", nil, nil)); got != 1024 {
		t.Errorf("jobSize = %d, want the cap, 1024", got)
	}
}
