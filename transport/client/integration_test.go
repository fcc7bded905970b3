package client

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// TestAgainstIngress runs the client against the real ingress library
// with PACKET gzip+AES, pipelining, and faults on the engine side.
func TestAgainstIngress(t *testing.T) {
	key := bytes.Repeat([]byte{3}, codec.KeySize)
	enc, err := codec.NewEncoder(codec.Options{Mode: codec.ModePacket, Compression: codec.CompressionGzip, Encryption: codec.EncryptionAESGCM, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := codec.NewDecoder(codec.ModePacket, key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[int64]string{}
	dups := 0
	srv, err := standin.New(standin.Config{
		Token:   "tok",
		Decoder: dec,
		Handler: func(id int64, rec []byte) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := got[id]; ok {
				dups++
			}
			got[id] = string(rec)
		},
		Faults: standin.Faults{CutAfter: 37, RetryEvery: 11, QueueFullEvery: 13, QueueFullDelay: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	cfg := testConfig(srv.Addr())
	cfg.MaxInFlight = 16
	cfg.CommitEvery = 8 // balances between the cuts, every 37 batches
	c := newClient(t, cfg)
	var in []transport.Batch
	for i := int64(1); i <= 300; i++ {
		p, err := enc.Encode(nil, []byte(fmt.Sprintf(`{"line":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, transport.Batch{ID: i, Payload: p})
	}
	for start := 0; start < len(in); start += 100 {
		res, err := c.Send(context.Background(), in[start:start+100])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Outcome != transport.Received {
				t.Fatalf("%+v", r)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := int64(1); i <= 300; i++ {
		if got[i] != fmt.Sprintf(`{"line":%d}`, i) {
			t.Fatalf("batch %d: %q", i, got[i])
		}
	}
	st, cs := srv.Stats(), c.Stats()
	if st.Cuts == 0 || cs.Retries == 0 || cs.QueueFull == 0 || cs.Reconnects == 0 {
		t.Fatalf("faults did not fire: ingress %+v client %+v", st, cs)
	}
	// A cut costs the batches answered since the last balanced barrier
	// (their outcomes are held until one balances) and those in flight.
	if limit := st.Cuts * uint64(cfg.CommitEvery+cfg.MaxInFlight); dups == 0 || uint64(dups) > limit {
		t.Fatalf("%d duplicates for %d cuts, want 1..%d", dups, st.Cuts, limit)
	}
}
