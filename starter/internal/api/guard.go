package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Who asked, as logged with each accepted change: the kind of credential,
// never the credential itself.
const (
	// CredToken is http.token.
	CredToken = "token"
	// CredTokenFile is the token the agent wrote to its token file.
	CredTokenFile = "token file"
)

// NewFileToken is a fresh token for the token file: 32 random bytes, hex.
func NewFileToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand aborts the program instead)
	return hex.EncodeToString(b)
}

type credKey struct{}

// credentialOf is the kind of credential the request was let in with.
func credentialOf(r *http.Request) string {
	s, _ := r.Context().Value(credKey{}).(string)
	return s
}

// openRoute: what a probe or a scraper reads (health, readiness,
// metrics), which carries no event data and changes nothing. It is open
// unless http.token is set; every other route needs a credential.
func openRoute(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// guard lets a request through to next when it may be served:
//   - open routes: without a credential unless http.token is set (then
//     with it, as before the token file existed);
//   - every other route: a Host naming this server (not a name a web page
//     rebound to loopback), no Origin but this server's own (a browser
//     sends one with every cross-site POST), and the bearer token, either
//     http.token or the token file's. Host and Origin are checked first,
//     so a foreign one is 403 even with the credential.
func guard(o *Options, next http.Handler) http.Handler {
	configured := strings.TrimSpace(o.Settings.Token)
	file := strings.TrimSpace(o.FileToken)
	listenHost, _, _ := net.SplitHostPort(strings.TrimSpace(o.Settings.Listen))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := openRoute(r)
		if open && configured == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !open {
			if err := sameServer(r, listenHost); err != nil {
				o.Logger.Warn("API request refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "reason", err.Error())
				http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
				return
			}
		}
		kind := credential(r.Header.Get("Authorization"), configured, file)
		if kind == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="edge-agent"`)
			http.Error(w, "unauthorized: send the API token (the agent's token file, readable by the agent's user, or http.token)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, kind)))
	})
}

// credential is the kind of token the Authorization header carries, ""
// for none. Both comparisons run whatever the header, each in constant
// time, so neither token can be found byte by byte; an empty token
// matches nothing.
func credential(header, configured, file string) string {
	h := []byte(header)
	okConf := configured != "" && subtle.ConstantTimeCompare(h, []byte("Bearer "+configured)) == 1
	okFile := file != "" && subtle.ConstantTimeCompare(h, []byte("Bearer "+file)) == 1
	switch {
	case okFile:
		return CredTokenFile
	case okConf:
		return CredToken
	}
	return ""
}

// sameServer refuses a request whose Host is not this server's address
// (DNS rebinding: a page's own name resolved to loopback) or whose Origin
// is another site's. Accepted hosts, all with the port the connection
// came in on: localhost, a loopback IP, the IP the connection reached,
// and http.listen's host.
func sameServer(r *http.Request, listenHost string) error {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return errors.New("cannot tell which address the request reached")
	}
	localIP, localPort, err := net.SplitHostPort(local.String())
	if err != nil {
		return fmt.Errorf("local address %q: %w", local, err)
	}
	host, port := splitHost(r.Host, r.TLS != nil)
	if port != localPort || !ourHost(host, localIP, listenHost) {
		return fmt.Errorf("the Host header %q is not this server's address", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	want := "http"
	if r.TLS != nil {
		want = "https"
	}
	if err != nil || u.Scheme != want || u.Path != "" && u.Path != "/" {
		return fmt.Errorf("the Origin header %q is not this server's", origin)
	}
	oh, op := splitHost(u.Host, u.Scheme == "https")
	if op != port || !strings.EqualFold(oh, host) {
		return fmt.Errorf("the Origin header %q is not this server's", origin)
	}
	return nil
}

// splitHost splits a Host header; without a port it is the scheme's.
func splitHost(hostport string, tls bool) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	if tls {
		return strings.Trim(hostport, "[]"), "443"
	}
	return strings.Trim(hostport, "[]"), "80"
}

func ourHost(host, localIP, listenHost string) bool {
	if host == "" {
		return false
	}
	if isLoopback(host) {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		if l := net.ParseIP(localIP); l != nil && ip.Equal(l) {
			return true
		}
	}
	if listenHost == "" {
		return false
	}
	if lip := net.ParseIP(listenHost); lip != nil && lip.IsUnspecified() {
		return false
	}
	return strings.EqualFold(host, listenHost)
}
