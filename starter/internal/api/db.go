package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// DB is the running agent's WAL; *agent.Agent is one.
type DB interface {
	// WAL is the WAL the agent has open, for reads; nil when it has none.
	WAL() *wal.WAL
	// UpdateWAL runs fn in the agent's scheduler loop, the WAL's only
	// writer, between two of its own transactions.
	UpdateWAL(ctx context.Context, fn func(tx *wal.Tx) error) error
}

// errNoWAL answers 503: the agent runs but holds no WAL (NON mode, or it
// is starting or stopping).
var errNoWAL = errors.New("the agent has no WAL open (delivery NON, or it is starting or stopping)")

// dbRoutes serves the db commands' reads and two of its writes under
// /db/. The documents are package dbview's, which `edge-agent db` prints.
func dbRoutes(mux *http.ServeMux, o *Options) {
	read := func(path string, fn func(w *wal.WAL, r *http.Request) (any, error)) {
		mux.HandleFunc("GET "+path, func(rw http.ResponseWriter, r *http.Request) {
			w := o.DB.WAL()
			if w == nil {
				writeError(rw, o, http.StatusServiceUnavailable, errNoWAL)
				return
			}
			doc, err := fn(w, r)
			if err != nil {
				writeError(rw, o, statusOfError(err), err)
				return
			}
			writeJSON(rw, o, http.StatusOK, doc)
		})
	}
	read("/db/info", func(w *wal.WAL, _ *http.Request) (any, error) { return dbview.ReadInfo(w) })
	read("/db/summary", func(w *wal.WAL, _ *http.Request) (any, error) { return dbview.ReadSummary(w) })
	read("/db/rows", func(w *wal.WAL, r *http.Request) (any, error) {
		q, err := listQuery(r)
		if err != nil {
			return nil, err
		}
		return dbview.ReadList(w, q)
	})
	read("/db/rows/{id}", func(w *wal.WAL, r *http.Request) (any, error) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil {
			return nil, badRequest("row id of %d bytes is not a row id (a decimal number)", len(r.PathValue("id")))
		}
		return dbview.ReadRow(w, id)
	})
	read("/db/positions", func(w *wal.WAL, r *http.Request) (any, error) {
		return dbview.ReadPositions(w, r.URL.Query().Get("source_id"))
	})
	read("/db/verify", func(w *wal.WAL, r *http.Request) (any, error) {
		n, err := intParam(r, "max_problems", 100)
		if err != nil {
			return nil, err
		}
		return dbview.Verify(w, n)
	})
	mux.HandleFunc("POST /db/{change}", func(rw http.ResponseWriter, r *http.Request) { serveChange(rw, r, o) })
	if o.Reread != nil {
		mux.HandleFunc("POST /db/reread", func(rw http.ResponseWriter, r *http.Request) { serveReread(rw, r, o) })
	}
}

// serveReread has the agent read a file again from an offset:
// ?path=…&offset=N&input=ID (offset default 0, input optional). Every
// refusal (a path no input reads, an offset beyond the size) is a 400
// with the agent's words.
func serveReread(rw http.ResponseWriter, r *http.Request, o *Options) {
	q := r.URL.Query()
	a := dbview.RereadArgs{Path: q.Get("path"), Input: q.Get("input")}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			writeError(rw, o, http.StatusBadRequest, fmt.Errorf("offset of %d bytes: want a byte offset of 0 or more", len(s)))
			return
		}
		a.Offset = &n
	}
	if err := a.Check(); err != nil {
		writeError(rw, o, http.StatusBadRequest, err)
		return
	}
	rep, err := o.Reread(r.Context(), a)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			code = http.StatusServiceUnavailable
		}
		writeError(rw, o, code, err)
		return
	}
	o.Logger.Info("file position moved on request through the API", "remote", r.RemoteAddr, "credential", credentialOf(r), "input_id", rep.Input, "path", rep.Path,
		"offset", rep.Offset, "reread_bytes", rep.Reread, "skipped_bytes", rep.Skipped)
	writeJSON(rw, o, http.StatusOK, rep)
}

// serveChange makes (or, with ?dry_run=true, only shows) the change the
// path names, through the agent's loop, the WAL's only writer.
func serveChange(rw http.ResponseWriter, r *http.Request, o *Options) {
	c, err := dbview.ParseChange(r.PathValue("change"))
	if err != nil {
		writeError(rw, o, http.StatusNotFound, err)
		return
	}
	w := o.DB.WAL()
	if w == nil {
		writeError(rw, o, http.StatusServiceUnavailable, errNoWAL)
		return
	}
	dry, err := boolParam(r, "dry_run")
	if err != nil {
		writeError(rw, o, http.StatusBadRequest, err)
		return
	}
	var res dbview.Result
	if dry {
		res, err = c.DryRun(w)
	} else {
		res = dbview.Result{Path: w.Path(), What: c.What()}
		err = o.DB.UpdateWAL(r.Context(), func(tx *wal.Tx) error {
			var err error
			res.Rows, err = c.Apply(tx, o.Now().UnixMilli())
			return err
		})
		if err == nil {
			o.Logger.Info("WAL changed on request through the API", "remote", r.RemoteAddr, "credential", credentialOf(r),
				"change", string(c), "rows", res.Rows)
		}
	}
	if err != nil {
		writeError(rw, o, statusOfError(err), err)
		return
	}
	writeJSON(rw, o, http.StatusOK, res)
}

// requestError is a request the server cannot serve as asked (400). Its
// text names the parameter and the value's length, never the value: the
// API repeats nothing a caller sent.
type requestError struct{ error }

func badRequest(format string, args ...any) error {
	return requestError{fmt.Errorf(format, args...)}
}

func statusOfError(err error) int {
	var re requestError
	switch {
	case errors.As(err, &re):
		return http.StatusBadRequest
	case errors.Is(err, dbview.ErrNoRow):
		return http.StatusNotFound
	case errors.Is(err, wal.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func listQuery(r *http.Request) (dbview.ListQuery, error) {
	var q dbview.ListQuery
	v := r.URL.Query()
	if s := v.Get("status"); s != "" {
		st, err := wal.ParseStatus(s)
		if err != nil {
			return q, badRequest("status of %d bytes: want one of PENDING, SENDING, RECEIVED, ACKED, DEAD", len(s))
		}
		q.Status = &st
	}
	if s := v.Get("after_id"); s != "" {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return q, badRequest("after_id of %d bytes: want a row id (a decimal number)", len(s))
		}
		q.AfterID = id
	}
	n, err := intParam(r, "limit", 100)
	if err != nil {
		return q, err
	}
	q.Limit = n
	return q, nil
}

func intParam(r *http.Request, name string, def int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, badRequest("%s must be an integer >= 0, got %d bytes that are not", name, len(s))
	}
	return n, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false, got %d bytes that are neither", name, len(s))
	}
	return b, nil
}

// apiError is the body of every failed /db/ request.
type apiError struct {
	Error string `json:"error"`
}

func writeError(rw http.ResponseWriter, o *Options, code int, err error) {
	writeJSON(rw, o, code, apiError{Error: err.Error()})
}

func writeJSON(rw http.ResponseWriter, o *Options, code int, doc any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	enc := json.NewEncoder(rw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		o.Logger.Debug("write API response", "error", err)
	}
}
