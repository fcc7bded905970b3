// Package connset holds what a TCP server needs to stop cleanly: its
// listener, the connections it serves and the goroutines serving them.
// The relay and the engine stand-in share it, so both close the same way:
// stop accepting, wake every blocked read, let sessions flush the replies
// they owe for a grace period, then cut what is left.
package connset

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// ErrStarted and ErrClosed are Start's refusals.
var (
	ErrStarted = errors.New("already started")
	ErrClosed  = errors.New("closed")
)

// acceptRetry spaces Accept calls after an error that is not a timeout,
// such as EMFILE, so a persistent one does not spin the accept loop.
const acceptRetry = 50 * time.Millisecond

// Set is a server's listener, connections and goroutines. The zero value
// is not usable: make one with New.
type Set struct {
	log  *slog.Logger
	name string // names the server in log lines

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	started  bool
	closing  bool
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup
	once     sync.Once
	closeErr error
}

// New returns an empty set; name prefixes its log lines ("edgesocket relay").
func New(log *slog.Logger, name string) *Set {
	return &Set{log: log, name: name, conns: make(map[net.Conn]struct{}), done: make(chan struct{})}
}

// Start calls listen and accepts on what it returns in the background,
// handing each connection, already tracked, to admit on the accept loop:
// admit must not block (it starts the session with Go). A second Start,
// or one after Close, is refused with ErrStarted or ErrClosed.
func (s *Set) Start(listen func() (net.Listener, error), admit func(net.Conn)) (net.Listener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil, ErrStarted
	}
	if s.closing {
		return nil, ErrClosed
	}
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	s.ln, s.started = ln, true
	s.Go(func() { s.acceptLoop(ln, admit) })
	return ln, nil
}

// Addr is the listening address (host:port) once started, else "".
func (s *Set) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Go runs f in a goroutine that Close waits for.
func (s *Set) Go(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Done is closed when Close begins.
func (s *Set) Done() <-chan struct{} { return s.done }

// Closing reports whether Close has begun.
func (s *Set) Closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Untrack forgets conn and closes it; a session calls it when it ends.
func (s *Set) Untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	_ = conn.Close()
}

// SetReadDeadline sets conn's read deadline unless Close has begun, in
// which case the deadline stays in the past so the session winds down.
func (s *Set) SetReadDeadline(conn net.Conn, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		t = time.Unix(1, 0)
	}
	_ = conn.SetReadDeadline(t)
}

// CloseConns closes every connection without a reply (a link cut), and
// keeps listening.
func (s *Set) CloseConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// Close stops listening, wakes every blocked read so sessions flush the
// replies they owe and close themselves, and waits for every goroutine
// started with Go. A peer that does not read its replies blocks those
// writes: after grace its connection is closed under it. Close is
// idempotent and returns the listener's close error.
func (s *Set) Close(grace time.Duration) error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		close(s.done)
		if s.ln != nil {
			s.closeErr = s.ln.Close()
		}
		for c := range s.conns {
			_ = c.SetReadDeadline(time.Unix(1, 0))
		}
		s.mu.Unlock()

		finished := make(chan struct{})
		go func() { s.wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(grace):
			s.CloseConns()
			<-finished
		}
	})
	return s.closeErr
}

func (s *Set) acceptLoop(ln net.Listener, admit func(net.Conn)) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.Closing() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error(s.name+" accept failed", slog.Any("error", err))
			select {
			case <-s.done:
				return
			case <-time.After(acceptRetry):
			}
			continue
		}
		if !s.track(conn) {
			_ = conn.Close()
			return
		}
		admit(conn)
	}
}

// track registers conn so Close can reach it; false once closing.
func (s *Set) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[conn] = struct{}{}
	return true
}
