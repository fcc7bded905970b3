package ownlogs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults and limits: the one place each is written.
const (
	// QueueRecords bounds the records waiting to be posted.
	QueueRecords = 1024
	// BatchRecords is the most records in one request.
	BatchRecords = 256
	// BatchWait is how long a first record waits for others.
	BatchWait = time.Second
	// PostTimeout bounds one request.
	PostTimeout = 10 * time.Second
	minRetry    = time.Second
	maxRetry    = time.Minute
)

// Sink is what the agent's log hub offers records to.
type Sink interface{ Offer(rec []byte) }

// Options configure a Shipper.
type Options struct {
	// Attach attaches a sink to the agent's log hub and returns its
	// detach func.
	Attach   func(Sink) (detach func())
	Resource Resource
	// Logger must not ship its records (see the package doc); nil
	// discards.
	Logger *slog.Logger
	// Client defaults to an http.Client without an overall timeout (each
	// post is bounded by PostTimeout).
	Client *http.Client
}

// Shipper posts the agent's own logs to the endpoint in force.
type Shipper struct {
	o   Options
	log *slog.Logger
	q   chan []byte

	mu     sync.Mutex
	target *target
	detach func()
	// changed wakes Run when the target changes.
	changed chan struct{}

	dropped, shipped, failures atomic.Int64
}

type target struct {
	endpoint string
	headers  map[string]string
}

// New returns a shipper with no endpoint: it takes nothing until Apply.
func New(o Options) *Shipper {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	return &Shipper{o: o, log: log, q: make(chan []byte, QueueRecords), changed: make(chan struct{}, 1)}
}

// Offer queues rec, or drops and counts it when the queue is full.
func (s *Shipper) Offer(rec []byte) {
	select {
	case s.q <- rec:
	default:
		s.dropped.Add(1)
	}
}

// Counts are the records dropped (queue full, or a post given up at a
// new endpoint), those posted, and the failed posts.
func (s *Shipper) Counts() (dropped, shipped, failures int64) {
	return s.dropped.Load(), s.shipped.Load(), s.failures.Load()
}

// Apply makes endpoint (an http or https URL of the OTLP/HTTP logs path,
// such as https://host:4318/v1/logs) the target, with headers on every
// request; "" stops shipping. Safe from any goroutine.
func (s *Shipper) Apply(endpoint string, headers map[string]string) error {
	var t *target
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("own_logs destination_endpoint %q: want an http or https URL such as https://collector:4318/v1/logs", endpoint)
		}
		t = &target{endpoint: endpoint, headers: maps.Clone(headers)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target = t
	switch {
	case t != nil && s.detach == nil:
		s.detach = s.o.Attach(s)
	case t == nil && s.detach != nil:
		s.detach()
		s.detach = nil
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}

func (s *Shipper) current() *target {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.target
}

// Run posts batches until ctx ends, then detaches.
func (s *Shipper) Run(ctx context.Context) {
	defer func() { _ = s.Apply("", nil) }()
	var batch [][]byte
	retry := time.Duration(0)
	failing := false
	for {
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case rec := <-s.q:
				batch = append(batch, rec)
			case <-s.changed:
				continue
			}
			batch = s.fill(ctx, batch)
		}
		t := s.current()
		if t == nil {
			s.dropped.Add(int64(len(batch)))
			batch = batch[:0]
			continue
		}
		err := s.post(ctx, t, batch)
		if err == nil {
			s.shipped.Add(int64(len(batch)))
			batch = batch[:0]
			retry = 0
			if failing {
				failing = false
				s.log.Info("own logs reach the OpAMP server's log endpoint again", slog.String("endpoint", t.endpoint))
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		s.failures.Add(1)
		retry = min(max(minRetry, 2*retry), maxRetry)
		if !failing {
			failing = true
			s.log.Warn("cannot ship own logs to the OpAMP server's log endpoint; retrying, records beyond the queue are dropped",
				slog.String("endpoint", t.endpoint), slog.String("error", err.Error()), slog.Duration("retry_in", retry))
		}
		if len(s.q) == cap(s.q) {
			// The queue is full behind this batch: drop the oldest.
			s.dropped.Add(int64(len(batch)))
			batch = batch[:0]
		}
		timer := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-s.changed:
			timer.Stop()
		}
	}
}

// fill adds queued records to batch for up to BatchWait.
func (s *Shipper) fill(ctx context.Context, batch [][]byte) [][]byte {
	timer := time.NewTimer(BatchWait)
	defer timer.Stop()
	for len(batch) < BatchRecords {
		select {
		case rec := <-s.q:
			batch = append(batch, rec)
		case <-timer.C:
			return batch
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

// errStatus is an answer other than 2xx.
var errStatus = errors.New("the log endpoint refused the request")

func (s *Shipper) post(ctx context.Context, t *target, batch [][]byte) error {
	body, err := encode(s.o.Resource, batch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, PostTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("own logs request: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(t.headers)) {
		req.Header.Set(k, t.headers[k])
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("post own logs: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: HTTP %d", errStatus, resp.StatusCode)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
