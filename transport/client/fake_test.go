package client

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Special replies understood by fakeEngine.
const (
	cut    = "<cut>"    // half-close: FIN, no reply, then drain
	silent = "<silent>" // no reply; keep the connection open
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

func newFakeEngine(t *testing.T, respond func(conn int, line string) string) *fakeEngine {
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
			if _, err := c.Write([]byte(reply + "\n")); err != nil {
				return
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
