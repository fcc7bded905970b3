package client

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Special replies understood by fakeEngine.
const (
	cut    = "<cut>"    // half-close: FIN, no reply, then drain
	silent = "<silent>" // no reply; keep the connection open
	// noNewline, ending a reply, sends it without the closing "\n".
	noNewline = "<no-newline>"
)

// fakeEngine is a scripted EdgeSocket peer on 127.0.0.1. For each line it
// asks respond what to answer; it records every line per connection.
type fakeEngine struct {
	t       *testing.T
	ln      net.Listener
	respond func(conn int, line string) string

	mu    sync.Mutex
	conns [][]string // lines received, per accepted connection
	open  []net.Conn
	wg    sync.WaitGroup
}

// newFakeEngine answers every __COMMIT__ PENDING, as an engine does
// before a checkpoint, and asks respond about every other line.
func newFakeEngine(t *testing.T, respond func(conn int, line string) string) *fakeEngine {
	t.Helper()
	return newRawFakeEngine(t, func(conn int, line string) string {
		if strings.HasPrefix(line, "__COMMIT__:") {
			return "PENDING"
		}
		return respond(conn, line)
	})
}

// newRawFakeEngine asks respond about every line, commits included.
func newRawFakeEngine(t *testing.T, respond func(conn int, line string) string) *fakeEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{t: t, ln: ln, respond: respond}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

// scripted answers ACK to auth and pops batch replies from script, then
// RECEIVED once the script is spent.
func scripted(script ...string) func(int, string) string {
	var mu sync.Mutex
	return func(_ int, line string) string {
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		mu.Lock()
		defer mu.Unlock()
		if len(script) == 0 {
			return "RECEIVED"
		}
		r := script[0]
		script = script[1:]
		return r
	}
}

func (f *fakeEngine) addr() string { return f.ln.Addr().String() }

func (f *fakeEngine) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		idx := len(f.conns)
		f.conns = append(f.conns, nil)
		f.open = append(f.open, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(idx, c)
	}
}

func (f *fakeEngine) serve(idx int, c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[idx] = append(f.conns[idx], line)
		f.mu.Unlock()
		switch reply := f.respond(idx, strings.TrimSuffix(line, "\n")); reply {
		case silent:
		case cut:
			// FIN rather than RST, so the replies already written reach
			// the client before it sees the end of the stream.
			_ = c.(*net.TCPConn).CloseWrite()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		default:
			// A reply may hold several lines, written at once so that
			// they reach the client in one read. A failed write does not
			// stop the reading: the tests count every line that arrived.
			if r, ok := strings.CutSuffix(reply, noNewline); ok {
				_, _ = c.Write([]byte(r))
			} else {
				_, _ = c.Write([]byte(reply + "\n"))
			}
		}
	}
}

func (f *fakeEngine) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for _, c := range f.open {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// accepts is the number of connections accepted so far.
func (f *fakeEngine) accepts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// lines returns what connection i sent, each line with its '\n'.
func (f *fakeEngine) lines(i int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.conns[i]...)
}

// batchLines counts __BATCH__ lines over all connections.
func (f *fakeEngine) batchLines() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.conns {
		for _, l := range c {
			if strings.HasPrefix(l, "__BATCH__:") {
				n++
			}
		}
	}
	return n
}

// drain waits until every connection has ended on its own (the client
// closed it), so that every line the client handed to its socket has been
// counted. Run it after closing the client.
func (f *fakeEngine) drain() {
	f.t.Helper()
	_ = f.ln.Close()
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		f.t.Fatal("engine connections still open 10s after the client closed")
	}
}

// batchIDs counts, per batch id, the __BATCH__ lines the engine read on
// every connection.
func (f *fakeEngine) batchIDs() map[int64]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := map[int64]int{}
	for _, c := range f.conns {
		for _, l := range c {
			rest, ok := strings.CutPrefix(l, "__BATCH__:")
			if !ok {
				continue
			}
			idText, _, _ := strings.Cut(rest, ":")
			id, err := strconv.ParseInt(idText, 10, 64)
			if err != nil {
				f.t.Errorf("engine read a batch line with a bad id: %q", l)
				continue
			}
			ids[id]++
		}
	}
	return ids
}
