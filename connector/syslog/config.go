package syslog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Protocols.
const (
	ProtoUDP = "udp"
	ProtoTCP = "tcp"
	ProtoTLS = "tls"
)

// Payload modes.
const (
	PayloadRaw    = "raw"
	PayloadParsed = "parsed"
)

// Defaults and limits: the one place each is written.
const (
	DefaultListen          = "127.0.0.1:5514"
	DefaultMaxMessageBytes = 64 << 10
	DefaultMaxConnections  = 256
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultQueueBytes      = 8 << 20
	minMessageBytes        = 480 // RFC 3164's minimum a receiver must take
	maxMessageBytesLimit   = 16 << 20
)

// Config is the `input` section for `type: syslog`; yaml tags are the keys.
type Config struct {
	// Protocol: udp, tcp (default) or tls.
	Protocol string `yaml:"protocol"`
	// Listen is host:port; one listener per input entry. Default
	// 127.0.0.1:5514. An address other hosts can reach without TLS is
	// warned about at config check: syslog carries no authentication.
	Listen string `yaml:"listen"`
	// TLS is required for protocol tls.
	TLS TLSConfig `yaml:"tls"`
	// Format: auto (default: RFC 5424 when a version follows <PRI>, else
	// RFC 3164, per message), rfc3164 or rfc5424.
	Format string `yaml:"format"`
	// MaxMessageBytes: a longer LF-framed message or datagram is cut and
	// counted; a longer octet count closes the connection. Default 64 KiB.
	MaxMessageBytes int `yaml:"max-message-bytes"`
	// MaxConnections caps open TCP/TLS connections; one more is accepted
	// and closed at once, and counted. Default 256.
	MaxConnections int `yaml:"max-connections"`
	// IdleTimeout closes a TCP/TLS connection that sent nothing for this
	// long. Default 10 min; 0 never closes.
	IdleTimeout time.Duration `yaml:"idle-timeout-ms"`
	// Payload: raw (default: the message as received in "payload" beside
	// the parsed fields) or parsed (the fields and "msg" only).
	Payload string `yaml:"payload"`
	// QueueBytes bounds the messages received but not yet taken by the
	// agent (memory, not the WAL). When it is full TCP/TLS stops reading
	// (the senders wait) and UDP drops, counting. Default 8 MiB.
	QueueBytes int `yaml:"queue-bytes"`
}

// TLSConfig names the listener's certificate and, for mutual TLS, the CAs
// client certificates must chain to.
type TLSConfig struct {
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// ClientCAFile, when set, makes a client certificate signed by one of
	// its CAs required.
	ClientCAFile string `yaml:"client-ca-file"`
}

// NewDefaultConfig returns the documented defaults.
func NewDefaultConfig() *Config {
	return &Config{
		Protocol:        ProtoTCP,
		Listen:          DefaultListen,
		Format:          FormatAuto,
		MaxMessageBytes: DefaultMaxMessageBytes,
		MaxConnections:  DefaultMaxConnections,
		IdleTimeout:     DefaultIdleTimeout,
		Payload:         PayloadRaw,
		QueueBytes:      DefaultQueueBytes,
	}
}

var (
	_ input.Config     = (*Config)(nil)
	_ input.PathAnchor = (*Config)(nil)
	_ input.Sourcer    = (*Config)(nil)
	_ input.Adviser    = (*Config)(nil)
)

// Validate reports every problem at once; each is an *input.FieldError.
// It reads the TLS files, so a missing key fails at config check.
func (c *Config) Validate() error {
	var errs []error
	proto := strings.ToLower(strings.TrimSpace(c.Protocol))
	switch proto {
	case ProtoUDP, ProtoTCP, ProtoTLS:
	default:
		errs = append(errs, input.Errorf("protocol", "must be udp, tcp or tls, got %q", c.Protocol))
	}
	if _, port, err := net.SplitHostPort(strings.TrimSpace(c.Listen)); err != nil || port == "" {
		errs = append(errs, input.Errorf("listen", "must be host:port (127.0.0.1:5514, or :5514 for every interface), got %q", c.Listen))
	}
	switch strings.ToLower(c.Format) {
	case FormatAuto, FormatRFC3164, FormatRFC5424:
	default:
		errs = append(errs, input.Errorf("format", "must be auto, rfc3164 or rfc5424, got %q", c.Format))
	}
	switch strings.ToLower(c.Payload) {
	case PayloadRaw, PayloadParsed:
	default:
		errs = append(errs, input.Errorf("payload", "must be raw or parsed, got %q", c.Payload))
	}
	if c.MaxMessageBytes < minMessageBytes || c.MaxMessageBytes > maxMessageBytesLimit {
		errs = append(errs, input.Errorf("max-message-bytes", "must be between %d and %d, got %d", minMessageBytes, maxMessageBytesLimit, c.MaxMessageBytes))
	}
	if c.MaxConnections <= 0 {
		errs = append(errs, input.Errorf("max-connections", "must be > 0, got %d", c.MaxConnections))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, input.Errorf("idle-timeout-ms", "must be >= 0 (0: never), got %d", c.IdleTimeout.Milliseconds()))
	}
	if c.QueueBytes < c.MaxMessageBytes {
		errs = append(errs, input.Errorf("queue-bytes", "must be at least max-message-bytes (%d), got %d", c.MaxMessageBytes, c.QueueBytes))
	}
	hasTLS := c.TLS.CertFile != "" || c.TLS.KeyFile != "" || c.TLS.ClientCAFile != ""
	switch {
	case proto == ProtoTLS:
		if _, err := c.TLS.load(); err != nil {
			errs = append(errs, err)
		}
	case hasTLS:
		errs = append(errs, input.Errorf("tls", "is set but protocol is %q: set protocol: tls, or remove tls", c.Protocol))
	}
	return errors.Join(errs...)
}

// load builds the server TLS config; errors are *input.FieldError.
func (t TLSConfig) load() (*tls.Config, error) {
	if t.CertFile == "" || t.KeyFile == "" {
		return nil, input.Errorf("tls", "protocol tls needs tls.cert-file and tls.key-file")
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, input.Errorf("tls.cert-file", "cannot load the certificate and key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, input.Errorf("tls.client-ca-file", "cannot read: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, input.Errorf("tls.client-ca-file", "holds no PEM certificate")
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// AnchorPaths makes the TLS file paths absolute under base.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	for _, p := range []*string{&c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
}

// Sources names where the input listens.
func (c *Config) Sources() []string {
	return []string{strings.ToLower(c.Protocol) + "://" + c.Listen}
}

// Advice warns about a listener other hosts can reach without TLS: anyone
// on the network can then write events, and read them on the way.
func (c *Config) Advice() []input.FieldError {
	host, _, err := net.SplitHostPort(strings.TrimSpace(c.Listen))
	if err != nil || isLoopback(host) || strings.EqualFold(c.Protocol, ProtoTLS) {
		return nil
	}
	return []input.FieldError{{Key: "listen", Err: fmt.Errorf(
		"%q is reachable from other hosts over %s without TLS: anyone there can send events, and read them in transit; use protocol: tls or listen on 127.0.0.1",
		c.Listen, strings.ToLower(c.Protocol))}}
}

// isLoopback: "localhost" and loopback IPs. An empty host means every
// interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
