package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// logsPath is OTLP/HTTP's path for logs.
const logsPath = "/v1/logs"

// serveHTTP answers one OTLP/HTTP export: 200 with an
// ExportLogsServiceResponse in the request's encoding once stored; 400 a
// request that does not decode; 405, 413, 415; 429 + Retry-After when
// the queue is full; 503 + Retry-After when stopping or the commit did
// not come in time. Errors are google.rpc.Status bodies, as OTLP asks.
func (in *Input) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	asJSON := mt == "application/json"
	if !asJSON && mt != "application/x-protobuf" {
		http.Error(w, "Content-Type must be application/x-protobuf or application/json", http.StatusUnsupportedMediaType)
		return
	}
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	default:
		in.stats.refused.Add(1)
		in.httpStatus(w, asJSON, http.StatusTooManyRequests, codes.Unavailable, "too many exports in progress (max-concurrent-requests)")
		return
	}
	body, code, msg := in.readBody(r)
	if code != 0 {
		in.httpStatus(w, asJSON, code, codes.InvalidArgument, msg)
		return
	}
	req := &collogspb.ExportLogsServiceRequest{}
	var err error
	if asJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)
		fixJSONIDs(req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		in.stats.badRequests.Add(1)
		in.httpStatus(w, asJSON, http.StatusBadRequest, codes.InvalidArgument, "the request does not decode as an OTLP logs export")
		return
	}
	rejected, out := in.export(r.Context(), req)
	switch out {
	case stored:
		resp := &collogspb.ExportLogsServiceResponse{}
		if rejected > 0 {
			resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: rejected, ErrorMessage: rejectMsg(in.cfg.MaxRecordBytes)}
		}
		in.httpWrite(w, asJSON, http.StatusOK, resp)
	case full:
		in.httpStatus(w, asJSON, http.StatusTooManyRequests, codes.Unavailable, "the input's queue is full (max-pending-bytes), or the agent's queue is; retry later")
	case stopping, timedOut:
		in.httpStatus(w, asJSON, http.StatusServiceUnavailable, codes.Unavailable, "the agent is stopping or did not confirm the records stored in time; retry")
	}
}

func rejectMsg(limit int) string {
	return "records over max-record-bytes (" + strconv.Itoa(limit) + ") as events were rejected"
}

// fixJSONIDs: OTLP/JSON writes trace and span ids in hex where protojson
// reads base64. Hex digits are base64 digits, so the 32 (16) hex digits
// decoded as base64 are 24 (12) bytes that encode back to the same text:
// re-encode, then decode as hex. Ids that are not hex are cleared.
func fixJSONIDs(req *collogspb.ExportLogsServiceRequest) {
	fix := func(id []byte, n int) []byte {
		if len(id) != n*3/2 {
			return id
		}
		out, err := hex.DecodeString(base64.StdEncoding.EncodeToString(id))
		if err != nil || len(out) != n {
			return nil
		}
		return out
	}
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				lr.TraceId = fix(lr.TraceId, 16)
				lr.SpanId = fix(lr.SpanId, 8)
			}
		}
	}
}

// readBody reads the body, gunzipped, up to max-body-bytes; code is
// non-zero on failure.
func (in *Input) readBody(r *http.Request) ([]byte, int, string) {
	limit := int64(in.cfg.MaxBodyBytes)
	over := "the request is over max-body-bytes (" + strconv.FormatInt(limit, 10) + ")"
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, over
	}
	wire := http.MaxBytesReader(nil, r.Body, limit)
	var src io.Reader = wire
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, http.StatusBadRequest, "the gzip body does not decompress"
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, "Content-Encoding must be gzip or none"
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), n > limit:
		return nil, http.StatusRequestEntityTooLarge, over
	case err != nil:
		in.stats.badRequests.Add(1)
		return nil, http.StatusBadRequest, "the body could not be read or decompressed"
	}
	in.stats.bytes.Add(n)
	return buf.Bytes(), 0, ""
}

// httpStatus writes a google.rpc.Status error body; 429 and 503 carry
// Retry-After.
func (in *Input) httpStatus(w http.ResponseWriter, asJSON bool, httpCode int, code codes.Code, msg string) {
	if httpCode == http.StatusTooManyRequests || httpCode == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(in.cfg.RetryAfter/time.Second)))
	}
	in.httpWrite(w, asJSON, httpCode, status.New(code, msg).Proto())
}

func (in *Input) httpWrite(w http.ResponseWriter, asJSON bool, code int, m proto.Message) {
	var b []byte
	if asJSON {
		b, _ = protojson.Marshal(m)
		w.Header().Set("Content-Type", "application/json")
	} else {
		b, _ = proto.Marshal(m)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// grpcService is OTLP/gRPC's LogsService.
type grpcService struct {
	collogspb.UnimplementedLogsServiceServer
	in *Input
}

// Export answers OK once stored (with partial_success for rejected
// records); UNAVAILABLE with RetryInfo when full, stopping or the commit
// did not come in time (OTLP exporters retry it).
func (s grpcService) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	in := s.in
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	default:
		in.stats.refused.Add(1)
		return nil, in.retryable("too many exports in progress (max-concurrent-requests)")
	}
	in.stats.bytes.Add(int64(proto.Size(req)))
	rejected, out := in.export(ctx, req)
	switch out {
	case stored:
		resp := &collogspb.ExportLogsServiceResponse{}
		if rejected > 0 {
			resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: rejected, ErrorMessage: rejectMsg(in.cfg.MaxRecordBytes)}
		}
		return resp, nil
	case full:
		return nil, in.retryable("the input's queue is full (max-pending-bytes), or the agent's queue is; retry later")
	case gone:
		return nil, status.Error(codes.Canceled, "the exporter left")
	default:
		return nil, in.retryable("the agent is stopping or did not confirm the records stored in time; retry")
	}
}

func (in *Input) retryable(msg string) error {
	st := status.New(codes.Unavailable, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(in.cfg.RetryAfter)}); err == nil {
		st = d
	}
	return st.Err()
}
