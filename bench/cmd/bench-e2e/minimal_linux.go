package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/transport/protocol"
)

// minimalWindow is the minimal client's window: lines awaiting replies.
const minimalWindow = 1024

// minimalRun is the yardstick of the engine-model rows: a minimal
// pipelined client (a window of 1,024 lines, each line resent at once
// after a QUEUE_FULL), as measured against the real engine, sending the
// data file's lines to the model at endpoint until t has them all
// committed. It returns the wall time from its connect.
func minimalRun(ctx context.Context, endpoint, data string, t *tally) (float64, error) {
	raw, err := os.ReadFile(data)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", data, err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	start := time.Now()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return 0, fmt.Errorf("minimal client: connect %s: %w", endpoint, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	r := protocol.NewLineReader(conn, 1<<16)
	if _, err := conn.Write(protocol.AppendAuth(nil, token)); err != nil {
		return 0, fmt.Errorf("minimal client: auth: %w", err)
	}
	if line, err := r.ReadLine(); err != nil || string(line) != "ACK" {
		return 0, fmt.Errorf("minimal client: auth answered %q: %v", line, err)
	}
	inflight := make(chan int, minimalWindow)
	resend := make(chan int, minimalWindow)
	readErr := make(chan error, 1)
	go func() {
		defer close(resend)
		for {
			line, err := r.ReadLine()
			if err != nil {
				readErr <- err
				return
			}
			i := <-inflight
			if protocol.ParseReply(line).Code == protocol.CodeQueueFull {
				resend <- i
			}
		}
	}()
	w := bufio.NewWriterSize(conn, 64<<10)
	var buf []byte
	send := func(i int) error {
		select {
		case inflight <- i:
		default:
			if err := w.Flush(); err != nil {
				return err
			}
			inflight <- i
		}
		buf = protocol.AppendCheckedBatch(buf[:0], int64(i)+1, lines[i])
		_, err := w.Write(buf)
		return err
	}
	next := 0
	for {
		var i int
		select {
		case i = <-resend:
		default:
			if next < len(lines) {
				i = next
				next++
				break
			}
			if err := w.Flush(); err != nil {
				return 0, fmt.Errorf("minimal client: write: %w", err)
			}
			var ok bool
			select {
			case i, ok = <-resend:
				if !ok {
					return 0, fmt.Errorf("minimal client: read: %w", <-readErr)
				}
			case <-t.done:
				return time.Since(start).Seconds(), nil
			}
		}
		if err := send(i); err != nil {
			return 0, fmt.Errorf("minimal client: write: %w", err)
		}
	}
}
