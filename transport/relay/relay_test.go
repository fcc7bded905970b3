package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// tickets is a deferred handler that keeps every ticket for the test to
// settle.
type tickets struct {
	mu   sync.Mutex
	got  []Ticket
	ids  []int64
	recs []string
	peer []Peer
	more chan struct{}
}

func newTickets() *tickets { return &tickets{more: make(chan struct{}, 1024)} }

func (k *tickets) handle(p Peer, id int64, record []byte, t Ticket) {
	k.mu.Lock()
	k.got = append(k.got, t)
	k.ids = append(k.ids, id)
	k.recs = append(k.recs, string(record))
	k.peer = append(k.peer, p)
	k.mu.Unlock()
	k.more <- struct{}{}
}

// wait blocks until n tickets are held.
func (k *tickets) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		k.mu.Lock()
		have := len(k.got)
		k.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-k.more:
		case <-deadline:
			t.Fatalf("handler got %d batches, want %d", have, n)
		}
	}
}

func (k *tickets) ticket(i int) Ticket {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.got[i]
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startRelay(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = 16
	}
	if len(cfg.Tokens) == 0 {
		cfg.Tokens = []Token{{Name: "edge-a", Value: "tok-a"}, {Name: "edge-b", Value: "tok-b"}}
	}
	if cfg.Handler == nil {
		cfg.Handler = immediate
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type peer = transporttest.Peer

func dial(t *testing.T, s *Server) *peer { return transporttest.DialPeer(t, s.Addr()) }

// immediate settles every batch RECEIVED at once.
func immediate(_ Peer, _ int64, _ []byte, t Ticket) { t.Done("") }

func authedAs(t *testing.T, s *Server, token string) *peer {
	t.Helper()
	p := dial(t, s)
	p.Send("__AUTH__:" + token + "\n")
	p.Expect("ACK")
	return p
}

// Many collectors at once, each pipelined, each known by its token's name.
func TestCollectorsPipelined(t *testing.T) {
	s := startRelay(t, Config{Handler: immediate})
	const conns, batches = 6, 200
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := range conns {
		token := []string{"tok-a", "tok-b"}[c%2]
		p := authedAs(t, s, token)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for i := 1; i <= batches; i++ {
				fmt.Fprintf(&b, "__BATCH__:%d:{\"c\":%d,\"i\":%d}\n", i, c, i)
			}
			if _, err := io.WriteString(p.Conn, b.String()); err != nil {
				errs <- err
				return
			}
			for i := range batches {
				line, err := p.R.ReadString('\n')
				if err != nil || line != "RECEIVED\n" {
					errs <- fmt.Errorf("conn %d reply %d = %q, %v", c, i, line, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := s.Collectors()
	if len(got) != conns {
		t.Fatalf("Collectors() lists %d, want %d", len(got), conns)
	}
	for _, c := range got {
		if c.Batches != batches || c.Received != batches {
			t.Errorf("collector %s %s: batches %d received %d, want %d", c.Name, c.Remote, c.Batches, c.Received, batches)
		}
	}
	totals := s.Totals()
	if len(totals) != 2 || totals[0].Name != "edge-a" || totals[0].Batches != conns/2*batches {
		t.Errorf("Totals() = %+v", totals)
	}
}

// A deferred reply is written only when its ticket is settled, and replies
// leave in request order whatever order the tickets are settled in.
func TestDeferredRepliesInRequestOrder(t *testing.T) {
	k := newTickets()
	s := startRelay(t, Config{Handler: k.handle})
	p := authedAs(t, s, "tok-a")
	p.Send("__BATCH__:1:a\n__BATCH__:2:b\n__BATCH__:3:c\n__BATCH__:4:d\n")
	k.wait(t, 4)
	k.ticket(3).Done("")
	k.ticket(2).Done(protocol.ReplyRetry)
	k.ticket(1).Done("")
	_ = p.Conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if line, err := p.R.ReadString('\n'); err == nil {
		t.Fatalf("got reply %q before the first batch was settled", line)
	}
	_ = p.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	k.ticket(0).Done(protocol.QueueFull(250 * time.Millisecond))
	k.ticket(0).Done("") // a second Done is ignored
	for _, want := range []string{"QUEUE_FULL:250", "RECEIVED", "RETRY", "RECEIVED"} {
		p.Expect(want)
	}
	if k.peer[0].Name != "edge-a" || k.recs[2] != "c" {
		t.Errorf("peer %+v record %q", k.peer[0], k.recs[2])
	}
}

// __COMMIT__ is answered from what this session made durable: ACK up to
// the highest id below which every batch got RECEIVED; RETRY for an id
// never seen; PENDING behind a refused batch.
func TestCommitFromDurability(t *testing.T) {
	k := newTickets()
	s := startRelay(t, Config{Handler: k.handle})
	p := authedAs(t, s, "tok-b")
	p.Send("__BATCH__:1:a\n__BATCH__:2:b\n__BATCH__:3:c\n")
	k.wait(t, 3)
	p.Send("__COMMIT__:1\n__COMMIT__:3\n__COMMIT__:9\n")
	k.ticket(0).Done("")
	k.ticket(1).Done(protocol.QueueFull(time.Second))
	k.ticket(2).Done("")
	for _, want := range []string{"RECEIVED", "QUEUE_FULL:1000", "RECEIVED", "ACK:1", "PENDING", "RETRY"} {
		p.Expect(want)
	}
	p.Send("__BATCH__:2:b\n")
	k.wait(t, 4)
	k.ticket(3).Done("")
	p.Send("__COMMIT__:3\n")
	p.Expect("RECEIVED")
	p.Expect("ACK:3")
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *Server)
	}{
		{"wrong token", func(t *testing.T, s *Server) {
			p := dial(t, s)
			p.Send("__AUTH__:nope\n")
			p.Expect("AUTH_FAILED")
			p.ExpectEOF()
		}},
		{"no auth line, a batch first", func(t *testing.T, s *Server) {
			p := dial(t, s)
			p.Send("__BATCH__:1:{}\n")
			p.Expect("AUTH_FAILED")
			p.ExpectEOF()
		}},
		{"silent before auth", func(t *testing.T, s *Server) {
			p := dial(t, s)
			p.Expect("AUTH_FAILED")
			p.ExpectEOF()
		}},
		{"auth line over its bound", func(t *testing.T, s *Server) {
			p := dial(t, s)
			p.Send("__AUTH__:" + strings.Repeat("x", maxAuthLineBytes+10) + "\n")
			p.Expect("AUTH_FAILED")
		}},
		{"garbage after auth is answered and the session goes on", func(t *testing.T, s *Server) {
			p := authedAs(t, s, "tok-a")
			p.Send("\x00\xff garbage\n__BATCH__:x:1\n__BATCH__:0:1\n__AUTH__:tok-a\n__BATCH__:5:{}\n")
			for _, want := range []string{"BAD_REQUEST", "INVALID_PARAM", "INVALID_PARAM", "BAD_REQUEST", "RECEIVED"} {
				p.Expect(want)
			}
		}},
		{"line over the limit", func(t *testing.T, s *Server) {
			p := authedAs(t, s, "tok-a")
			p.Send("__BATCH__:1:" + strings.Repeat("y", 2048) + "\n")
			p.Expect("BAD_REQUEST")
			p.ExpectEOF()
		}},
		{"slow loris: a line never finished", func(t *testing.T, s *Server) {
			p := authedAs(t, s, "tok-a")
			start := time.Now()
			for range 3 {
				p.Send("__BA")
				time.Sleep(50 * time.Millisecond)
			}
			p.ExpectEOF()
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("slow line cut after %v, want about the 300ms read timeout", el)
			}
		}},
		{"idle collector is closed", func(t *testing.T, s *Server) {
			p := authedAs(t, s, "tok-a")
			p.ExpectEOF()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startRelay(t, Config{
				Handler: immediate, MaxLineBytes: 1024, AuthTimeout: 300 * time.Millisecond,
				ReadTimeout: 300 * time.Millisecond, IdleTimeout: 500 * time.Millisecond,
			})
			tt.run(t, s)
		})
	}
}

// A collector over MaxConnections is REJECTED after it authenticated; the
// ones in keep going.
func TestMaxConnections(t *testing.T) {
	s := startRelay(t, Config{Handler: immediate, MaxConnections: 2})
	a := authedAs(t, s, "tok-a")
	_ = authedAs(t, s, "tok-b")
	c := dial(t, s)
	c.Send("__AUTH__:tok-a\n")
	c.Expect("REJECTED")
	c.ExpectEOF()
	a.Send("__BATCH__:1:{}\n")
	a.Expect("RECEIVED")
}

// busyCollector sends one batch at a time until stop and counts replies.
func busyCollector(t *testing.T, s *Server, stop <-chan struct{}, done *atomic.Int64) <-chan error {
	p := authedAs(t, s, "tok-a")
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for id := int64(1); ; id++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = p.Conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := fmt.Fprintf(p.Conn, "__BATCH__:%d:{}\n", id); err != nil {
				errc <- err
				return
			}
			line, err := p.R.ReadString('\n')
			if err != nil || line != "RECEIVED\n" {
				errc <- fmt.Errorf("reply %q, %v", line, err)
				return
			}
			done.Add(1)
		}
	}()
	return errc
}

// memListener is an in-process listener: dial hands Accept the server
// end of a net.Pipe. A pipe has no buffer to size and, inside a synctest
// bubble, blocks durably, so the fake clock alone decides when deadlines
// fire: no kernel buffer size or machine load changes a verdict.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "pipe" }
func (memAddr) String() string  { return "pipe" }

// authedMem connects to ln, authenticates with token and expects ACK.
func authedMem(t *testing.T, ln *memListener, token string) *peer {
	t.Helper()
	c, s := net.Pipe()
	select {
	case ln.conns <- s:
	case <-ln.done:
		t.Fatal("listener closed")
	}
	p := transporttest.NewPeer(t, c)
	p.Send("__AUTH__:" + token + "\n")
	p.Expect("ACK")
	return p
}

// A collector that never reads its replies is closed once a reply write
// has waited WriteTimeout; meanwhile another collector is served, and
// after it the stuck one holds no slot. The connections are pipes and the
// clock is synctest's: the server's reply write to the stuck collector
// blocks at once (the blocking write path, which the plain TCP path also
// ends in once its socket is full), and time moves only when every
// goroutine waits.
func TestNeverReadingCollectorIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const writeTimeout = 300 * time.Millisecond
		ln := newMemListener()
		s, err := New(Config{
			Tokens:         []Token{{Name: "edge-a", Value: "tok-a"}, {Name: "edge-b", Value: "tok-b"}},
			MaxConnections: 2, MaxInFlight: 8, WriteTimeout: writeTimeout, Handler: immediate,
		})
		if err != nil {
			t.Fatal(err)
		}
		s.listen = func() (net.Listener, error) { return ln, nil }
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }() // before the bubble's root ends: its goroutines must exit

		busy := authedMem(t, ln, "tok-a")
		stuck := authedMem(t, ln, "tok-b")
		start := time.Now()
		// A guard in fake time: only a server that never closes meets it.
		_ = stuck.Conn.SetWriteDeadline(start.Add(20 * writeTimeout))
		wrote := make(chan error, 1)
		go func() {
			line := []byte("__BATCH__:1:" + strings.Repeat("z", 200) + "\n")
			// Bounded: the server stops reading after MaxInFlight
			// requests owed and one read buffer, far below 1,000 lines.
			for range 1000 {
				if _, err := stuck.Conn.Write(line); err != nil {
					wrote <- err
					return
				}
			}
			wrote <- nil
		}()
		synctest.Wait() // the stuck collector's first reply write now blocks

		for i := 1; i <= 50; i++ {
			busy.Send(fmt.Sprintf("__BATCH__:%d:{}\n", i))
			busy.Expect("RECEIVED")
		}
		if el := time.Since(start); el >= writeTimeout {
			t.Fatalf("the busy collector's 50 round trips took %v of the clock, want them served while the other is stuck", el)
		}
		if got := len(s.Collectors()); got != 2 {
			t.Fatalf("Collectors() lists %d while one is stuck, want 2", got)
		}

		werr := <-wrote
		el := time.Since(start)
		if werr == nil || errors.Is(werr, os.ErrDeadlineExceeded) {
			t.Fatalf("the server never closed a collector that does not read (err %v after %v) %+v", werr, el, s.Collectors())
		}
		if el < writeTimeout || el >= 2*writeTimeout {
			t.Errorf("the stuck collector was closed after %v, want WriteTimeout (%v)", el, writeTimeout)
		}
		synctest.Wait() // its session ends

		got := s.Collectors()
		if len(got) != 1 || got[0].Name != "edge-a" {
			t.Fatalf("Collectors() = %+v once the stuck one is closed, want edge-a alone", got)
		}
		// Its slot is free: a second collector fits under MaxConnections 2.
		again := authedMem(t, ln, "tok-b")
		again.Send("__BATCH__:1:{}\n")
		again.Expect("RECEIVED")
		busy.Send("__BATCH__:51:{}\n")
		busy.Expect("RECEIVED")
	})
}

// 5,000 connection attempts (garbage, silence, wrong tokens, too many at
// once) each end in a refusal or a close; the heap stays bounded and a
// collector already in keeps making progress.
func TestConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 connections: not in -short")
	}
	s := startRelay(t, Config{Handler: immediate, AuthTimeout: 200 * time.Millisecond, MaxHandshakes: 32,
		AuthFailDelay: 10 * time.Millisecond, AuthFailDelayMax: 50 * time.Millisecond})
	stop := make(chan struct{})
	var progress atomic.Int64
	errc := busyCollector(t, s, stop, &progress)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const attempts, wave = 5000, 250
	var answered, closed atomic.Int64
	var peakHeap atomic.Uint64
	kinds := []string{"garbage\x00\xff\n", "", "__AUTH__:wrong\n", "__BATCH__:1:x\n"}
	for w := 0; w < attempts; w += wave {
		var wg sync.WaitGroup
		for i := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
				if err != nil {
					closed.Add(1) // a full backlog refuses: also a clear outcome
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if k := kinds[(w+i)%len(kinds)]; k != "" {
					_, _ = io.WriteString(c, k)
				}
				line, err := bufio.NewReader(c).ReadString('\n')
				switch {
				case line == "AUTH_FAILED\n" || line == "REJECTED\n":
					answered.Add(1)
				case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
					closed.Add(1)
				default:
					t.Errorf("attempt answered %q, %v", line, err)
				}
			}()
		}
		wg.Wait()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peakHeap.Load() {
			peakHeap.Store(ms.HeapInuse)
		}
	}
	during := progress.Load()
	close(stop)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Logf("5,000 attempts: %d answered, %d closed; busy collector made %d round trips; heap in use %d KiB before, peak %d KiB",
		answered.Load(), closed.Load(), during, before.HeapInuse>>10, peakHeap.Load()>>10)
	if answered.Load()+closed.Load() != attempts {
		t.Errorf("%d attempts had no clear outcome", attempts-answered.Load()-closed.Load())
	}
	if during < 100 {
		t.Errorf("the collector already in made only %d round trips during the flood", during)
	}
	// The test's own 250 client connections and goroutines are in the
	// heap too; the server's share is bounded by MaxHandshakes.
	if grow := int64(peakHeap.Load()) - int64(before.HeapInuse); grow > 64<<20 {
		t.Errorf("heap grew by %d MiB during the flood", grow>>20)
	}
	if st := s.Stats(); st.Evicted == 0 || st.AuthFailures.Total() == 0 {
		t.Errorf("stats %+v: want both evictions and auth failures", st)
	}
}

// Close answers what is ready and ends every session even with replies
// owed that nobody will settle.
func TestCloseWithTicketsOwed(t *testing.T) {
	k := newTickets()
	s := startRelay(t, Config{Handler: k.handle})
	p := authedAs(t, s, "tok-a")
	p.Send("__BATCH__:1:a\n__BATCH__:2:b\n")
	k.wait(t, 2)
	k.ticket(0).Done("")
	p.Expect("RECEIVED")
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a session with a reply owed")
	}
	k.ticket(1).Done("") // after the end: ignored
	p.ExpectEOF()
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no tokens", Config{Handler: immediate}, "at least one"},
		{"no handler", Config{Tokens: []Token{{"a", "x"}}}, "handler is required"},
		{"empty name", Config{Handler: immediate, Tokens: []Token{{"", "x"}}}, "name is empty"},
		{"name twice", Config{Handler: immediate, Tokens: []Token{{"a", "x"}, {"a", "y"}}}, "used twice"},
		{"same token twice", Config{Handler: immediate, Tokens: []Token{{"a", "x"}, {"b", "x"}}}, "another name"},
		{"token with a line break", Config{Handler: immediate, Tokens: []Token{{"a", "x\ny"}}}, "line break"},
		{"negative max connections", Config{Handler: immediate, Tokens: []Token{{"a", "x"}}, MaxConnections: -1}, "max connections -1"},
		{"per-source share above the budget", Config{Handler: immediate, Tokens: []Token{{"a", "x"}}, MaxHandshakes: 4, MaxHandshakesPerSource: 5}, "per source 5"},
		{"auth timeout not below idle", Config{Handler: immediate, Tokens: []Token{{"a", "x"}}, AuthTimeout: time.Minute, IdleTimeout: time.Minute}, "below the idle timeout"},
		{"auth timeout too long", Config{Handler: immediate, Tokens: []Token{{"a", "x"}}, AuthTimeout: 2 * time.Minute}, "auth timeout 2m0s"},
		{"fail delay above its max", Config{Handler: immediate, Tokens: []Token{{"a", "x"}}, AuthFailDelay: 2 * time.Second, AuthFailDelayMax: time.Second}, "must not exceed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzSessionLines feeds arbitrary bytes to an authenticated session: every
// reply is a protocol reply, there is at most one per request line, and
// the session ends (no hang) once the input ends.
func FuzzSessionLines(f *testing.F) {
	for _, seed := range []string{
		"__BATCH__:1:{}\n", "__BATCH__:1:{}\r\n__COMMIT__:1\n", "__BATCH__:x:\n", "\n\n\r",
		"__COMMIT__:-1\n__AUTH__:t\n", "garbage", "__BATCH__:9223372036854775807:a\r__BATCH__:1",
		strings.Repeat("z", 300),
	} {
		f.Add([]byte(seed))
	}
	s, err := New(Config{
		MaxConnections: 256, Tokens: []Token{{"n", "tok"}}, Handler: immediate, MaxLineBytes: 256,
		IdleTimeout: 2 * time.Second,
	})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		if _, err := io.WriteString(c, "__AUTH__:tok\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); line != "ACK\n" {
			t.Fatalf("auth: %q, %v", line, err)
		}
		go func() {
			_, _ = c.Write(in)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		lines := strings.Count(strings.ReplaceAll(string(in), "\r\n", "\n"), "\n") +
			strings.Count(strings.ReplaceAll(string(in), "\r\n", "\n"), "\r") + 1
		replies := 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatal("the session did not end after the input did")
				}
				break
			}
			replies++
			if code := protocol.ParseReply([]byte(line)).Code; code == protocol.CodeUnknown {
				t.Fatalf("reply %q is no protocol reply", line)
			}
		}
		if replies > lines {
			t.Fatalf("%d replies to at most %d lines", replies, lines)
		}
	})
}

// A connection whose collector keeps up with its replies costs one
// goroutine: its replies are written by whoever settles them, without a
// writer goroutine per connection.
func TestOneGoroutinePerConnection(t *testing.T) {
	const n = 40
	s := startRelay(t, Config{Handler: immediate, MaxConnections: n + 1})
	base := runtime.NumGoroutine()
	for i := range n {
		p := authedAs(t, s, "tok-a")
		p.Send(fmt.Sprintf("__BATCH__:%d:{}\n", i+1))
		p.Expect("RECEIVED")
	}
	deadline := time.Now().Add(5 * time.Second)
	extra := runtime.NumGoroutine() - base
	for extra > n+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		extra = runtime.NumGoroutine() - base
	}
	if extra > n+2 {
		t.Fatalf("%d connections run %d more goroutines, want about one each", n, extra)
	}
}

// A collector that stops reading its replies for a while gets every one
// of them, in order, once it reads again: the replies its socket could not
// take at once are written by a goroutine of the connection, which ends
// once it has caught up. Meanwhile reading stops at MaxInFlight.
func TestSlowReaderGetsEveryReplyInOrder(t *testing.T) {
	const batches, inFlight = 20000, 64
	s := startRelay(t, Config{Handler: immediate, MaxInFlight: inFlight})
	base := runtime.NumGoroutine()
	p := authedAs(t, s, "tok-a")
	if tc, ok := p.Conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(2048)
	}
	_ = p.Conn.SetDeadline(time.Now().Add(20 * time.Second))
	sent := make(chan error, 1)
	go func() {
		var b strings.Builder
		for i := range batches {
			fmt.Fprintf(&b, "__BATCH__:%d:{}\n", i+1)
		}
		_, err := io.WriteString(p.Conn, b.String())
		sent <- err
	}()
	// The server's writes back up: its ring fills to MaxInFlight.
	deadline := time.Now().Add(10 * time.Second)
	owed := 0
	for owed < inFlight && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if cs := s.Collectors(); len(cs) == 1 {
			owed = cs[0].Owed
		}
	}
	if owed < inFlight {
		t.Fatalf("the server's ring holds %d replies owed, want it full (%d) while the collector does not read", owed, inFlight)
	}
	if st := s.Collectors()[0]; st.Batches >= batches {
		t.Fatalf("the server read all %d batches while their replies could not be written", st.Batches)
	}
	if tc, ok := p.Conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(1 << 20) // a tiny window would make each round trip slow
	}
	for i := range batches {
		got, err := p.R.ReadString('\n')
		if err != nil || got != "RECEIVED\n" {
			t.Fatalf("reply %d = %q, %v; want RECEIVED", i+1, got, err)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	// Caught up: the connection is back to its one goroutine.
	deadline = time.Now().Add(5 * time.Second)
	extra := runtime.NumGoroutine() - base
	for extra > 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		extra = runtime.NumGoroutine() - base
	}
	if extra > 1 {
		t.Fatalf("a caught-up connection runs %d goroutines, want 1", extra)
	}
}

// DoneAll settles interleaved tickets of several connections and writes
// each connection's replies once, all of them, in request order, even
// when its head's run comes before the rest of its tickets.
func TestDoneAllWritesEachConnectionOnce(t *testing.T) {
	k := newTickets()
	s := startRelay(t, Config{Handler: k.handle})
	a := authedAs(t, s, "tok-a")
	a.Send("__BATCH__:1:a\n__BATCH__:2:b\n__BATCH__:3:c\n")
	k.wait(t, 3)
	b := authedAs(t, s, "tok-b")
	b.Send("__BATCH__:1:x\n__BATCH__:2:y\n")
	k.wait(t, 5)
	ts := []Ticket{k.ticket(0), k.ticket(3), k.ticket(1), k.ticket(4), k.ticket(2)}
	DoneAll(ts, "")
	for _, p := range []struct {
		p    *peer
		want string
	}{{a, "RECEIVED\nRECEIVED\nRECEIVED\n"}, {b, "RECEIVED\nRECEIVED\n"}} {
		buf := make([]byte, 256)
		n, err := p.p.Conn.Read(buf) // one write arrives in one read
		if err != nil || string(buf[:n]) != p.want {
			t.Fatalf("first read = %q, %v; want every reply at once: %q", buf[:n], err, p.want)
		}
	}
}
