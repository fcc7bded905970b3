package api

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
)

// DefaultListen is http.listen's default: loopback only, so nothing is
// reachable from the network until an operator decides otherwise.
const DefaultListen = "127.0.0.1:9466"

// Off is the http.listen value that disables the server.
const Off = "off"

// Settings are agent.yaml's http.* keys.
type Settings struct {
	// Listen is host:port, or "off".
	Listen string `yaml:"listen"`
	// Token, when set, is a bearer token every request must carry, the
	// probes' and /metrics included; the token file's is accepted too
	// (except on those three). It is required when Listen is not a
	// loopback address.
	Token string `yaml:"token"`
	// Pprof serves Go's profiler under /debug/pprof/. Off by default: a
	// profile costs CPU and shows the program's internals.
	Pprof bool `yaml:"pprof"`
	// TLS makes the API speak HTTPS.
	TLS TLSSettings `yaml:"tls"`
}

// DefaultSettings are the server's defaults.
func DefaultSettings() Settings { return Settings{Listen: DefaultListen} }

// Enabled reports whether the server runs.
func (s Settings) Enabled() bool { return !strings.EqualFold(strings.TrimSpace(s.Listen), Off) }

// Validate names keys relative to the http section. The status and the
// metrics tell an observer where the agent reads and what it holds, so an
// address others can reach needs the token.
func (s Settings) Validate() error {
	var p check.Problems
	if !s.Enabled() {
		return nil
	}
	host, port, err := net.SplitHostPort(strings.TrimSpace(s.Listen))
	if err != nil {
		p.Add("listen", "must be host:port or %q, got %q", Off, s.Listen)
		return p.Err()
	}
	if port == "" {
		p.Add("listen", "needs a port, got %q", s.Listen)
	}
	if !isLoopback(host) && strings.TrimSpace(s.Token) == "" && !s.TLS.Enabled() {
		p.Add("listen", "%q is reachable from other hosts: set http.token (a bearer token) or http.tls, or listen on 127.0.0.1", s.Listen)
	}
	if s.TLS.Enabled() != (strings.TrimSpace(s.TLS.KeyFile) != "") {
		p.Add("tls", "cert-file and key-file go together: set both or neither")
	}
	return p.Err()
}

// isLoopback: "localhost" and loopback IPs. An empty host means every
// interface, and a name other than localhost may resolve anywhere.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Bound returns s with Listen replaced by the address the running agent
// wrote to addrFile (paths.APIAddrFile) when Listen asks for a free port
// (port 0), which names no port to dial; s as it is otherwise.
func (s Settings) Bound(addrFile string) (Settings, error) {
	if !s.Enabled() {
		return s, nil
	}
	if _, port, err := net.SplitHostPort(strings.TrimSpace(s.Listen)); err != nil || port != "0" {
		return s, nil
	}
	raw, err := os.ReadFile(addrFile)
	if err != nil {
		return s, fmt.Errorf("http.listen %q binds a free port, and the address the agent bound cannot be read from %s: %w", s.Listen, addrFile, err)
	}
	addr := strings.TrimSpace(string(raw))
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" || port == "" {
		return s, fmt.Errorf("%s: %q is not the host:port of a listening API; restart the agent to write it again", addrFile, addr)
	}
	s.Listen = addr
	return s, nil
}

// Local is s as the CLI on this host reaches the agent whose pid file is
// pidFile: Listen as Bound finds it, and Token the agent's token file's
// when that file can be read (the server takes either), so the agent's
// user needs no http.token. An unreadable file keeps http.token; the
// agent then answers 401 to what needs a credential.
func (s Settings) Local(pidFile string) (Settings, error) {
	s, err := s.Bound(paths.APIAddrFile(pidFile))
	if err != nil {
		return s, err
	}
	if raw, err := os.ReadFile(paths.APITokenFile(pidFile)); err == nil {
		if tok := strings.TrimSpace(string(raw)); tok != "" {
			s.Token = tok
		}
	}
	return s, nil
}
