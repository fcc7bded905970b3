package opampdev

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server/types"
)

// Package is a top-level package (the agent's binary) to offer.
type Package struct {
	Name    string // "" is fine: the top-level package's key
	Version string
	Content []byte
	// SHA256 and Signature go into the offer as they are; a test sets a
	// wrong one on purpose. SHA256 nil means the content's.
	SHA256, Signature []byte
}

// packages is the server's package side: one offer, and the HTTP server
// its file is downloaded from (on loopback, a port of its own).
type packages struct {
	mu       sync.Mutex
	offer    *protobufs.PackagesAvailable
	content  []byte
	cutAfter int64 // > 0: the next download is cut after so many bytes
	requests []string
	srv      *http.Server
	ln       net.Listener
}

// OfferPackage offers p to every agent that accepts packages, now and at
// every message until the agent reports it took this offer. It returns
// the download URL.
func (s *Server) OfferPackage(p Package) (string, error) {
	url, err := s.pkgs.serve(s.addr)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(p.Content)
	sha := p.SHA256
	if sha == nil {
		sha = sum[:]
	}
	all := sha256.Sum256(append(append([]byte(p.Version), 0), append(sha, p.Signature...)...))
	pa := &protobufs.PackagesAvailable{AllPackagesHash: all[:], Packages: map[string]*protobufs.PackageAvailable{
		p.Name: {Type: protobufs.PackageType_PackageType_TopLevel, Version: p.Version, Hash: all[:],
			File: &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: sha, Signature: p.Signature}},
	}}
	s.pkgs.mu.Lock()
	s.pkgs.offer, s.pkgs.content = pa, p.Content
	s.pkgs.mu.Unlock()
	// The connections of the agents that accept packages, copied under the
	// lock: onMessage changes both maps and the agents as messages come.
	s.mu.Lock()
	send := make(map[string]types.Connection, len(s.conns))
	for uid, c := range s.conns {
		if a := s.agents[uid]; a != nil && a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages != 0 {
			send[uid] = c
		}
	}
	s.mu.Unlock()
	for uid, c := range send {
		raw, _ := uuid.Parse(uid)
		if err := c.Send(context.Background(), &protobufs.ServerToAgent{InstanceUid: raw[:], PackagesAvailable: pa}); err != nil {
			s.log.Debug("package offer not sent now; the agent gets it at its next message", "instance_uid", uid, "error", err)
		}
	}
	return url, nil
}

// CutNextDownload makes the next download of the package end after n
// bytes (the connection closed mid-body), once: a flaky link, for
// trying a resumed download.
func (s *Server) CutNextDownload(n int64) {
	s.pkgs.mu.Lock()
	s.pkgs.cutAfter = n
	s.pkgs.mu.Unlock()
}

// Downloads lists the package requests served so far, each as its Range
// header ("" for the whole file).
func (s *Server) Downloads() []string {
	s.pkgs.mu.Lock()
	defer s.pkgs.mu.Unlock()
	return append([]string(nil), s.pkgs.requests...)
}

// pendingOffer is the offer for an agent that has not yet reported it.
func (s *Server) pendingOffer(a *Agent) *protobufs.PackagesAvailable {
	if a.Capabilities&protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages == 0 {
		return nil
	}
	s.pkgs.mu.Lock()
	defer s.pkgs.mu.Unlock()
	pa := s.pkgs.offer
	if pa == nil || (a.Packages != nil && bytes.Equal(a.Packages.GetServerProvidedAllPackagesHash(), pa.GetAllPackagesHash())) {
		return nil
	}
	return pa
}

func (p *packages) serve(addr net.Addr) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return "", fmt.Errorf("package server: %w", err)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", fmt.Errorf("package server: %w", err)
		}
		p.ln = ln
		p.srv = &http.Server{Handler: http.HandlerFunc(p.handle), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = p.srv.Serve(ln) }()
	}
	return "http://" + p.ln.Addr().String() + "/packages/edge-agent", nil
}

func (p *packages) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/packages/edge-agent" {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	content, cut := p.content, p.cutAfter
	p.cutAfter = 0
	p.requests = append(p.requests, r.Header.Get("Range"))
	p.mu.Unlock()
	if cut > 0 {
		w = &cutWriter{ResponseWriter: w, left: cut}
	}
	http.ServeContent(w, r, "edge-agent", time.Time{}, bytes.NewReader(content))
}

// cutWriter lets left bytes of the body through, then aborts the
// response: the client sees the connection close mid-body.
type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, _ := c.ResponseWriter.Write(b)
	c.left -= int64(n)
	if c.left <= 0 {
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	return n, nil
}

func (p *packages) stop(ctx context.Context) error {
	p.mu.Lock()
	srv := p.srv
	p.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("package server: %w", err)
	}
	return nil
}

// PackageStatus is the agent's report on the top-level package: status
// (Installed, InstallPending, Installing, InstallFailed, Downloading),
// the version it has, the one offered, and the error; "" before any.
func (a Agent) PackageStatus() (status, has, offered, errMsg string) {
	for _, ps := range a.Packages.GetPackages() {
		return strings.TrimPrefix(ps.GetStatus().String(), "PackageStatusEnum_"), ps.GetAgentHasVersion(), ps.GetServerOfferedVersion(), ps.GetErrorMessage()
	}
	return "", "", "", ""
}
