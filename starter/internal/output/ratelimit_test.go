package output

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

func TestRateLimitValidate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		r       RateLimit
		badKeys []string
	}{
		{"off", RateLimit{}, nil},
		{"both with a burst", RateLimit{EventsPerSecond: 0.5, BytesPerSecond: 1 << 20, Burst: 3}, nil},
		{"negative", RateLimit{EventsPerSecond: -1, BytesPerSecond: -1, Burst: -1}, []string{"events-per-second", "bytes-per-second", "burst"}},
		{"NaN", RateLimit{EventsPerSecond: math.NaN()}, []string{"events-per-second"}},
		{"too high", RateLimit{EventsPerSecond: 2e9, BytesPerSecond: 1 << 41, Burst: 1 << 41}, []string{"events-per-second", "bytes-per-second", "burst"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *check.FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("problem %v names no key", e)
					}
					got = append(got, fe.Key)
				}
			}
			if len(got) != len(tt.badKeys) {
				t.Fatalf("problems at %q, want %q", got, tt.badKeys)
			}
			for i := range got {
				if got[i] != tt.badKeys[i] {
					t.Fatalf("problems at %q, want %q", got, tt.badKeys)
				}
			}
		})
	}
}

func TestRateLimitBuckets(t *testing.T) {
	for _, tt := range []struct {
		name             string
		r                RateLimit
		events, bytes    int
		eta              time.Duration
		etaEvents, etaBy int64
	}{
		{"off", RateLimit{}, 0, 0, 0, 1000, 1 << 20},
		{"events: one second by default, at least one event", RateLimit{EventsPerSecond: 0.5}, 1, 0, 20 * time.Second, 10, 1 << 20},
		{"events: burst in events", RateLimit{EventsPerSecond: 100, Burst: 5}, 5, 0, 10 * time.Second, 1000, 1 << 20},
		{"bytes: one second by default", RateLimit{BytesPerSecond: 1000}, 0, 1000, 3 * time.Second, 1 << 20, 3000},
		{"bytes: burst in bytes", RateLimit{BytesPerSecond: 1000, Burst: 10}, 0, 10, 3 * time.Second, 1 << 20, 3000},
		// Both: the burst is in events, the byte bucket covers the same
		// span (5 events at 10/s: half a second); the slower cap sets
		// the ETA.
		{"both", RateLimit{EventsPerSecond: 10, BytesPerSecond: 1000, Burst: 5}, 5, 500, 10 * time.Second, 100, 3000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if e, b := tt.r.EventBurst(), tt.r.ByteBurst(); e != tt.events || b != tt.bytes {
				t.Errorf("buckets %d events, %d bytes; want %d, %d", e, b, tt.events, tt.bytes)
			}
			if got := tt.r.TimeToSend(tt.etaEvents, tt.etaBy); got != tt.eta {
				t.Errorf("TimeToSend(%d, %d) = %v, want %v", tt.etaEvents, tt.etaBy, got, tt.eta)
			}
			if tt.r.On() != (tt.events > 0 || tt.bytes > 0) {
				t.Errorf("On() = %v", tt.r.On())
			}
		})
	}
}
