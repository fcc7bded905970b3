package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// taskWait bounds how long a task request waits for the agent's result.
const taskWait = 2 * time.Minute

// control is the devserver's HTTP side, for trying what the OpAMP
// server pushes (curl in the walkthrough of docs/opamp.md):
//
//	GET  /agents                              the agents, as JSON
//	POST /agents/{uid}/tasks/{task}           run a task (the body, if any, is its JSON args); waits for the result
//	POST /connections/edgesocket              offer {"endpoint","token","cert_file","key_file","ca_file"}
//	POST /connections/opamp                   offer {"endpoint","headers","ca_file","cert_file","key_file"}
//	POST /connections/own_logs                offer {"endpoint","headers"}: an OTLP/HTTP logs URL ("" withdraws)
//
// uid "any" is the first connected agent. A diagnostics bundle is saved
// as saveDir/<uid>-<task id>.tar.gz, and its path is in the answer.
type control struct {
	srv     *opampdev.Server
	saveDir string
	seq     atomic.Int64
}

func (c *control) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agents", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, c.srv.Agents()) })
	mux.HandleFunc("POST /agents/{uid}/tasks/{task}", c.task)
	mux.HandleFunc("POST /connections/edgesocket", c.edgesocket)
	mux.HandleFunc("POST /connections/opamp", c.opamp)
	mux.HandleFunc("POST /connections/own_logs", c.ownLogs)
	return mux
}

func (c *control) uid(w http.ResponseWriter, uid string) (string, bool) {
	if uid != "any" {
		return uid, true
	}
	for _, a := range c.srv.Agents() {
		if a.Connected {
			return a.InstanceUID, true
		}
	}
	writeError(w, http.StatusNotFound, errors.New("no agent is connected"))
	return "", false
}

// maxTaskArgs bounds a task request's body (its args).
const maxTaskArgs = 64 << 10

func (c *control) task(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTaskArgs))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("read the task's args: %w", err))
		return
	}
	var args json.RawMessage
	if len(bytes.TrimSpace(body)) > 0 {
		if !json.Valid(body) {
			writeError(w, http.StatusBadRequest, errors.New(`the body is the task's args and must be JSON, e.g. {"path":"/var/log/app.log","offset":0}`))
			return
		}
		args = body
	}
	uid, ok := c.uid(w, r.PathValue("uid"))
	if !ok {
		return
	}
	id := fmt.Sprintf("dev-%d-%d", time.Now().Unix(), c.seq.Add(1))
	task := r.PathValue("task")
	if err := c.srv.SendTask(uid, id, task, args); err != nil {
		writeError(w, http.StatusConflict, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskWait)
	defer cancel()
	var res opampdev.TaskResult
	err = c.srv.Wait(ctx, func([]opampdev.Agent) bool {
		var ok bool
		res, ok = c.srv.Result(id)
		return ok
	})
	if err != nil {
		writeError(w, http.StatusGatewayTimeout, fmt.Errorf("no result for task %s (%s): %w", id, task, err))
		return
	}
	answer := struct {
		opampdev.TaskResult
		SavedTo string `json:"saved_to,omitempty"`
	}{TaskResult: res}
	if len(res.Attachment) > 0 {
		path := filepath.Join(c.saveDir, uid+"-"+id+".tar.gz")
		if err := os.WriteFile(path, res.Attachment, 0o600); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Errorf("save the bundle: %w", err))
			return
		}
		answer.SavedTo = path
	}
	writeJSON(w, http.StatusOK, answer)
}

// tlsFiles are PEM files the offers read.
type tlsFiles struct {
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	CAFile   string `json:"ca_file"`
}

func (f tlsFiles) read() (cert, key, ca []byte, err error) {
	for _, p := range []struct {
		path string
		dst  *[]byte
	}{{f.CertFile, &cert}, {f.KeyFile, &key}, {f.CAFile, &ca}} {
		if p.path == "" {
			continue
		}
		if *p.dst, err = os.ReadFile(p.path); err != nil {
			return nil, nil, nil, err
		}
	}
	return cert, key, ca, nil
}

func (c *control) edgesocket(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Endpoint string `json:"endpoint"`
		Token    string `json:"token"`
		tlsFiles
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("body: %w", err))
		return
	}
	cert, key, ca, err := req.read()
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	hash := c.srv.OfferEdgeSocket(opampdev.EdgeSocket{Endpoint: req.Endpoint, Token: req.Token, Cert: cert, Key: key, CA: ca})
	writeJSON(w, http.StatusOK, map[string]string{"offered": fmt.Sprintf("%x", hash)})
}

func (c *control) opamp(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Endpoint string            `json:"endpoint"`
		Headers  map[string]string `json:"headers"`
		tlsFiles
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("body: %w", err))
		return
	}
	cert, key, ca, err := req.read()
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	hash := c.srv.OfferOpAMP(req.Endpoint, req.Headers, ca, cert, key)
	writeJSON(w, http.StatusOK, map[string]string{"offered": fmt.Sprintf("%x", hash)})
}

func (c *control) ownLogs(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Endpoint string            `json:"endpoint"`
		Headers  map[string]string `json:"headers"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("body: %w", err))
		return
	}
	hash := c.srv.OfferOwnLogs(req.Endpoint, req.Headers)
	writeJSON(w, http.StatusOK, map[string]string{"offered": fmt.Sprintf("%x", hash)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

// serveControl listens on addr until ctx ends.
func serveControl(ctx context.Context, addr string, c *control, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("--control %s: %w", addr, err)
	}
	hs := &http.Server{Handler: c.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped", "error", err)
		}
	}()
	context.AfterFunc(ctx, func() { _ = hs.Close() })
	return ln.Addr().String(), nil
}
