package httpin

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/internal/pushq"
)

// serve answers one request. Status codes: 200 stored (after the WAL
// commit), 400 a bad record (none kept), 401 no or a wrong bearer token,
// 405 not POST, 413 body over max-body-bytes, 415 an unknown
// Content-Encoding, 429 the queue is full or too many requests are in
// progress (Retry-After), 503 stopping or the commit not confirmed in
// time. Every answer is a one-line JSON object.
func (in *Input) serve(w http.ResponseWriter, r *http.Request) {
	in.stats.requests.Add(1)
	if r.URL.Path != in.cfg.Path {
		in.answer(w, http.StatusNotFound, "no such path: POST to "+in.cfg.Path)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		in.answer(w, http.StatusMethodNotAllowed, "only POST is taken")
		return
	}
	if in.token != "" && !in.authorized(r.Header.Get("Authorization")) {
		in.stats.unauthorized.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer realm="edge-agent"`)
		in.answer(w, http.StatusUnauthorized, "a valid bearer token is required")
		return
	}
	enc, ok := contentEncoding(r.Header.Get("Content-Encoding"))
	if !ok {
		in.answer(w, http.StatusUnsupportedMediaType, "Content-Encoding must be gzip, zstd or none")
		return
	}
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	default:
		in.refuse(w, "too many requests in progress (max-concurrent-requests)")
		return
	}
	if in.q.Stopped() {
		in.answer(w, http.StatusServiceUnavailable, "the agent is stopping; send again")
		return
	}
	body, status, msg := in.readBody(r, enc)
	if status != 0 {
		if status == http.StatusRequestEntityTooLarge {
			in.stats.tooLarge.Add(1)
		}
		in.answer(w, status, msg)
		return
	}
	in.stats.bytes.Add(int64(len(body)))
	var d decoder
	events, rerr := d.decode(nil, body, formatOf(r.Header.Get("Content-Type")), in.now())
	in.stats.invalid.Add(d.invalid)
	if rerr != nil {
		in.stats.badRequests.Add(1)
		in.answer(w, http.StatusBadRequest, "record at "+rerr.Error()+"; no record of this request was kept")
		return
	}
	if len(events) == 0 {
		in.answerOK(w, 0)
		return
	}
	pending, err := in.q.TryPutPending(events)
	switch {
	case errors.Is(err, pushq.ErrClosed):
		in.answer(w, http.StatusServiceUnavailable, "the agent is stopping; send again")
		return
	case err != nil:
		in.answer(w, http.StatusInternalServerError, err.Error())
		return
	case pending == nil:
		in.refuse(w, "the input's queue is full (max-pending-bytes), or the agent's queue is")
		return
	}
	in.stats.records.Add(int64(len(events)))
	switch pending.Wait(r.Context(), in.cfg.CommitTimeout) {
	case pushq.Stored:
		in.stats.stored.Add(1)
		in.answerOK(w, len(events))
	case pushq.Closed:
		in.answer(w, http.StatusServiceUnavailable, "the agent stopped before the records were confirmed stored; send again")
	case pushq.TimedOut:
		in.stats.commitTimeouts.Add(1)
		in.answer(w, http.StatusServiceUnavailable, "the records were not confirmed stored within commit-timeout-ms; they may still be: a resend may duplicate")
	case pushq.Left:
		// The sender left: the records may still be stored.
	}
}

// authorized compares the bearer token in constant time.
func (in *Input) authorized(h string) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(in.token)) == 1
}

// readBody reads the body, decompressed, up to max-body-bytes on the
// wire and decompressed; status is non-zero (with a message) on failure.
func (in *Input) readBody(r *http.Request, enc string) (body []byte, status int, msg string) {
	limit := int64(in.cfg.MaxBodyBytes)
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, "the body is over max-body-bytes (" + strconv.FormatInt(limit, 10) + ")"
	}
	wire := http.MaxBytesReader(nil, r.Body, limit)
	var src io.Reader = wire
	switch enc {
	case "gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return in.bodyError(err, "the gzip body does not decompress")
		}
		defer zr.Close()
		src = zr
	case "zstd":
		zr, err := zstd.NewReader(wire, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
		if err != nil {
			return in.bodyError(err, "the zstd body does not decompress")
		}
		defer zr.Close()
		src = zr
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err != nil {
		return in.bodyError(err, "the "+encName(enc)+" body does not decompress")
	}
	if n > limit {
		return nil, http.StatusRequestEntityTooLarge, "the decompressed body is over max-body-bytes (" + strconv.FormatInt(limit, 10) + ")"
	}
	return buf.Bytes(), 0, ""
}

func encName(enc string) string {
	if enc == "" {
		return "request"
	}
	return enc
}

// bodyError tells a body over the wire limit (413) from a read or
// decompression failure (400).
func (in *Input) bodyError(err error, msg string) ([]byte, int, string) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, http.StatusRequestEntityTooLarge, "the body is over max-body-bytes (" + strconv.Itoa(in.cfg.MaxBodyBytes) + ")"
	}
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, http.StatusRequestEntityTooLarge, "the decompressed body is over max-body-bytes (" + strconv.Itoa(in.cfg.MaxBodyBytes) + ")"
	}
	in.stats.badRequests.Add(1)
	return nil, http.StatusBadRequest, msg
}

// refuse answers 429 with Retry-After.
func (in *Input) refuse(w http.ResponseWriter, why string) {
	in.stats.refused.Add(1)
	in.warnRefused.Warn(in.log, "http input answering 429: "+why)
	w.Header().Set("Retry-After", strconv.Itoa(int(in.cfg.RetryAfter/time.Second)))
	in.answer(w, http.StatusTooManyRequests, why+"; retry later")
}

func (in *Input) answerOK(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"accepted":`+strconv.Itoa(n)+"}\n")
}

// answer writes {"error": msg}; msg never holds what the sender sent.
func (in *Input) answer(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := jsonenc.AppendString([]byte(`{"error":`), []byte(msg))
	_, _ = w.Write(append(b, "}\n"...))
	if status >= 500 {
		in.log.Warn("http input answered "+strconv.Itoa(status), slog.String("why", msg))
	}
}
