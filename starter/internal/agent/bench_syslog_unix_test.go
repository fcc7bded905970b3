//go:build unix

package agent

import (
	"bufio"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/connector/syslog"
)

// BenchmarkSyslogTCP sends b.N RFC 5424 messages (octet counting, about
// 150 bytes) over one loopback TCP connection to a syslog input, through
// the WAL (fsync on) and the EdgeSocket client to a loopback ingress, and
// reports messages/s and the CPU seconds per million messages of the whole
// process (sender, agent and fake engine together).
//
//	go test -run '^$' -bench SyslogTCP -benchtime 200000x ./internal/agent/
func BenchmarkSyslogTCP(b *testing.B) {
	for _, inflight := range []int{1, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			addr := l.Addr().String()
			_ = l.Close()
			sendErr := make(chan error, 1)
			cpu0 := cpuSeconds(b)
			benchEndToEnd(b, inflight, 0, func(cfg *testCfg, opts *Options) {
				sc := syslog.NewDefaultConfig()
				sc.Listen = addr
				cfg.InputType, cfg.Input = syslog.TypeName, sc
				opts.InputList = []InputSpec{singleInput(cfg.InputType, cfg.Input)}
				opts.Inputs = input.NewRegistry(syslog.NewFactory())
				go func() { sendErr <- sendSyslog(addr, b.N) }()
			})
			if err := <-sendErr; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric((cpuSeconds(b)-cpu0)/float64(b.N)*1e6, "cpu-s/1M-msgs")
		})
	}
}

// sendSyslog dials addr (retrying while the agent starts) and writes n
// octet-counted messages.
func sendSyslog(addr string, n int) error {
	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		<-time.After(2 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("dial syslog input: %w", err)
	}
	defer c.Close()
	w := bufio.NewWriterSize(c, 64<<10)
	var msg []byte
	for i := range n {
		msg = fmt.Appendf(msg[:0], "<134>1 2026-05-01T12:00:00.000Z gw-%d app 812 REQ - GET /api/v1/items?id=%d 200 12ms", i%8, i)
		if _, err := fmt.Fprintf(w, "%d %s", len(msg), msg); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
