package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// maxRequestBytes bounds one OTLP/HTTP request body, compressed and
// decompressed, so a bad sender cannot make the sink grow without end.
const maxRequestBytes = 64 << 20

// otlpSink serves OTLP/HTTP logs (POST /v1/logs, protobuf, gzip or
// plain) on loopback and hands every LogRecord's encoded bytes to handle
// before it answers 200, so an exporter's success means counted.
type otlpSink struct {
	srv  *http.Server
	addr string
}

func startOTLPSink(ctx context.Context, handle func(rec []byte)) (*otlpSink, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for OTLP/HTTP on loopback: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(body)
			if err != nil {
				http.Error(w, "gzip: "+err.Error(), http.StatusBadRequest)
				return
			}
			defer zr.Close()
			body = io.LimitReader(zr, maxRequestBytes+1)
		}
		msg, err := io.ReadAll(body)
		if err == nil && len(msg) > maxRequestBytes {
			err = fmt.Errorf("request larger than %d bytes", maxRequestBytes)
		}
		if err == nil {
			err = logRecords(msg, handle)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// An empty ExportLogsServiceResponse: everything accepted.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	s := &otlpSink{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr().String()}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *otlpSink) Close() error { return s.srv.Close() }

// logRecords walks an encoded ExportLogsServiceRequest
// (resource_logs = 1 → scope_logs = 2 → log_records = 2) and calls handle
// with each LogRecord's bytes. Only the nesting is decoded; the fields of
// a record are left to the caller.
func logRecords(msg []byte, handle func(rec []byte)) error {
	return eachField(msg, 1, func(rl []byte) error {
		return eachField(rl, 2, func(sl []byte) error {
			return eachField(sl, 2, func(rec []byte) error {
				handle(rec)
				return nil
			})
		})
	})
}

// eachField calls f with the bytes of every length-delimited field
// numbered want in the protobuf message b, skipping the other fields.
func eachField(b []byte, want uint64, f func([]byte) error) error {
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return errors.New("protobuf: bad field key")
		}
		b = b[n:]
		num, wire := key>>3, key&7
		switch wire {
		case 0: // varint
			if _, n = uvarint(b); n <= 0 {
				return fmt.Errorf("protobuf: bad varint in field %d", num)
			}
			b = b[n:]
		case 1: // 64-bit
			if len(b) < 8 {
				return fmt.Errorf("protobuf: field %d: short fixed64", num)
			}
			b = b[8:]
		case 5: // 32-bit
			if len(b) < 4 {
				return fmt.Errorf("protobuf: field %d: short fixed32", num)
			}
			b = b[4:]
		case 2: // length-delimited
			l, n := uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("protobuf: field %d: bad length", num)
			}
			v := b[n : n+int(l)]
			b = b[n+int(l):]
			if num == want {
				if err := f(v); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("protobuf: field %d: unsupported wire type %d", num, wire)
		}
	}
	return nil
}

// uvarint decodes a base-128 varint; n <= 0 means malformed or short.
func uvarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
