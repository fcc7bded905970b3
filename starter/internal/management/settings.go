package management

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
)

// DefaultHeartbeatInterval is management.opamp.heartbeat-interval-ms's
// default, the OpAMP specification's own.
const DefaultHeartbeatInterval = 30 * time.Second

// Settings are agent.yaml's management section. They always come from the
// local file: a remote config cannot change how the agent reaches its
// server.
type Settings struct {
	OpAMP OpAMPSettings `yaml:"opamp"`
}

// OpAMPSettings are management.opamp.*; off unless Endpoint is set.
type OpAMPSettings struct {
	// Endpoint is the server: ws:// or wss:// (WebSocket) or http:// or
	// https:// (plain HTTP polling, every heartbeat interval).
	Endpoint string `yaml:"endpoint"`
	// Headers are sent with every request (an Authorization header, say).
	// Values are secrets: never logged nor reported.
	Headers map[string]string `yaml:"headers"`
	// HeadersFile names, per header, a file holding its value; the config
	// layer reads it into Headers (the file wins).
	HeadersFile map[string]string `yaml:"headers-file"`
	// TLS are the same keys as output.tls.
	TLS client.TLSOptions `yaml:"tls"`
	// HeartbeatInterval is how often the agent reports while nothing
	// changes (and, over HTTP, how often it polls).
	HeartbeatInterval time.Duration `yaml:"heartbeat-interval-ms"`
	// AcceptRemoteConfig lets the server replace the config; false
	// reports the capability as absent.
	AcceptRemoteConfig bool `yaml:"accept-remote-config"`
	// Packages is self-upgrade through OpAMP packages.
	Packages PackageSettings `yaml:"packages"`
}

// DefaultSettings are the defaults: off, and once an endpoint is set, a
// 30 s heartbeat and remote configs accepted.
func DefaultSettings() Settings {
	return Settings{OpAMP: OpAMPSettings{HeartbeatInterval: DefaultHeartbeatInterval, AcceptRemoteConfig: true, Packages: DefaultPackageSettings()}}
}

// Enabled reports whether the agent talks to an OpAMP server.
func (s Settings) Enabled() bool { return strings.TrimSpace(s.OpAMP.Endpoint) != "" }

// Validate names keys relative to the management section.
func (s Settings) Validate() error {
	if !s.Enabled() {
		return nil
	}
	o := s.OpAMP
	var p check.Problems
	u, err := url.Parse(strings.TrimSpace(o.Endpoint))
	switch {
	case err != nil || u.Host == "":
		p.Add("opamp.endpoint", "must be a URL such as ws://127.0.0.1:4320/v1/opamp, got %q", o.Endpoint)
	case !isScheme(u.Scheme):
		p.Add("opamp.endpoint", "scheme must be ws, wss, http or https, got %q", u.Scheme)
	case (u.Scheme == "wss" || u.Scheme == "https") != o.TLS.Enabled:
		p.Add("opamp.tls.enabled", "must be %t for a %s:// endpoint", !o.TLS.Enabled, u.Scheme)
	}
	p.PositiveMillis("opamp.heartbeat-interval-ms", o.HeartbeatInterval)
	o.Packages.validate(&p)
	for name := range o.Headers {
		if !validHeaderName(name) {
			p.Add("opamp.headers", "%q is not a valid HTTP header name", name)
		}
	}
	for name := range o.HeadersFile {
		if !validHeaderName(name) {
			p.Add("opamp.headers-file", "%q is not a valid HTTP header name", name)
		}
	}
	var errs []error
	if err := o.TLS.Validate(); err != nil {
		var fe *transport.FieldError
		if errors.As(err, &fe) {
			err = &check.FieldError{Key: "opamp.tls." + fe.Key, Err: fe.Err}
		}
		errs = append(errs, err)
	}
	return errors.Join(append(errs, p.Err())...)
}

// AnchorPaths resolves the header and TLS files with resolve (against the
// install root).
func (s *Settings) AnchorPaths(resolve func(string) string) {
	for name, p := range s.OpAMP.HeadersFile {
		s.OpAMP.HeadersFile[name] = resolve(p)
	}
	for _, p := range []*string{&s.OpAMP.TLS.CAFile, &s.OpAMP.TLS.CertFile, &s.OpAMP.TLS.KeyFile} {
		*p = resolve(*p)
	}
}

// Redacted returns a copy whose header values are a placeholder.
func (s Settings) Redacted(placeholder string) Settings {
	if len(s.OpAMP.Headers) > 0 {
		h := make(map[string]string, len(s.OpAMP.Headers))
		for name := range s.OpAMP.Headers {
			h[name] = placeholder
		}
		s.OpAMP.Headers = h
	}
	return s
}

// header builds the request headers.
func (o OpAMPSettings) header() http.Header {
	h := http.Header{}
	for name, v := range o.Headers {
		h.Set(name, v)
	}
	return h
}

func isScheme(s string) bool { return s == "ws" || s == "wss" || s == "http" || s == "https" }

// validHeaderName: an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if c > 127 || !(c == '!' || c == '#' || c == '$' || c == '%' || c == '&' || c == '\'' || c == '*' ||
			c == '+' || c == '-' || c == '.' || c == '^' || c == '_' || c == '`' || c == '|' || c == '~' ||
			c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
