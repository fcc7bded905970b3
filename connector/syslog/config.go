package syslog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
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
	// A connection that has not yet sent a byte of data (after its TLS
	// handshake) is cheap to open and proves nothing: it gets a short
	// deadline and may be evicted for a newcomer.
	DefaultFirstByteTimeout   = 5 * time.Second
	DefaultMaxConnsPerSource  = 32
	DefaultAuthFailureMaxWait = 30 * time.Second
	DefaultLogInterval        = 10 * time.Second
	DefaultReceiveBufferBytes = 4 << 20
	minMessageBytes           = 480 // RFC 3164's minimum a receiver must take
	maxMessageBytesLimit      = 16 << 20
	maxReceiveBufferBytes     = 1 << 30
	// authFailureFirstWait is the wait after a source's first refused
	// client certificate; each further one doubles it up to
	// auth-failure-max-delay-ms.
	authFailureFirstWait = 250 * time.Millisecond
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
	// MaxConnections caps open TCP/TLS connections. When they are all
	// open, a new connection evicts the oldest one that has not sent a
	// byte of data yet; when every one has, the new one is closed at once
	// and counted. Default 256.
	MaxConnections int `yaml:"max-connections"`
	// MaxConnectionsPerSource caps the connections of one source address
	// (an IPv6 /64); over it the source's oldest silent connection is
	// evicted, or the new one refused. Default 32.
	MaxConnectionsPerSource int `yaml:"max-connections-per-source"`
	// FirstByteTimeout closes a TCP/TLS connection that has not completed
	// its TLS handshake and sent its first byte of data this long after it
	// was accepted. Default 5 s; at most idle-timeout-ms.
	FirstByteTimeout time.Duration `yaml:"first-byte-timeout-ms"`
	// IdleTimeout closes a TCP/TLS connection that sent nothing for this
	// long once it has sent data. Default 10 min; 0 never closes.
	IdleTimeout time.Duration `yaml:"idle-timeout-ms"`
	// AuthFailureMaxDelay bounds the wait imposed on a source whose
	// client certificates were refused (mutual TLS): its next connections
	// wait before their handshake, 250 ms after the first refusal,
	// doubling with each one up to this. Default 30 s; 0 does not wait.
	AuthFailureMaxDelay time.Duration `yaml:"auth-failure-max-delay-ms"`
	// LogInterval spaces the WARN lines of one kind about bad senders
	// (framing, handshakes, refusals, strict drops); those held back are
	// counted in the next one. Refused client certificates are logged as
	// one summary per interval. Default 10 s.
	LogInterval time.Duration `yaml:"log-interval-ms"`
	// Strict drops, and counts, messages that are not well-formed RFC
	// 5424 or RFC 3164 (<PRI> and a timestamp) instead of delivering them
	// with parse_error. Default false.
	Strict bool `yaml:"strict"`
	// ReceiveBufferBytes is the UDP socket's receive buffer (SO_RCVBUF),
	// which rides out bursts; the kernel caps it at net.core.rmem_max.
	// UDP only. Default 4 MiB; 0 keeps the kernel's default.
	ReceiveBufferBytes int `yaml:"receive-buffer-bytes"`
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
		Format:          message.FormatAuto,
		MaxMessageBytes: DefaultMaxMessageBytes,
		MaxConnections:  DefaultMaxConnections,
		IdleTimeout:     DefaultIdleTimeout,
		Payload:         PayloadRaw,
		QueueBytes:      DefaultQueueBytes,

		MaxConnectionsPerSource: DefaultMaxConnsPerSource,
		FirstByteTimeout:        DefaultFirstByteTimeout,
		AuthFailureMaxDelay:     DefaultAuthFailureMaxWait,
		LogInterval:             DefaultLogInterval,
		ReceiveBufferBytes:      DefaultReceiveBufferBytes,
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
	case message.FormatAuto, message.FormatRFC3164, message.FormatRFC5424:
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
	if c.MaxConnectionsPerSource <= 0 || (c.MaxConnections > 0 && c.MaxConnectionsPerSource > c.MaxConnections) {
		errs = append(errs, input.Errorf("max-connections-per-source", "must be between 1 and max-connections (%d), got %d", c.MaxConnections, c.MaxConnectionsPerSource))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, input.Errorf("idle-timeout-ms", "must be >= 0 (0: never), got %d", c.IdleTimeout.Milliseconds()))
	}
	switch {
	case c.FirstByteTimeout < time.Millisecond:
		errs = append(errs, input.Errorf("first-byte-timeout-ms", "must be > 0, got %d", c.FirstByteTimeout.Milliseconds()))
	case c.IdleTimeout > 0 && c.FirstByteTimeout > c.IdleTimeout:
		errs = append(errs, input.Errorf("first-byte-timeout-ms", "must be at most idle-timeout-ms (%d), got %d", c.IdleTimeout.Milliseconds(), c.FirstByteTimeout.Milliseconds()))
	}
	if c.AuthFailureMaxDelay < 0 {
		errs = append(errs, input.Errorf("auth-failure-max-delay-ms", "must be >= 0 (0: no wait), got %d", c.AuthFailureMaxDelay.Milliseconds()))
	}
	if c.LogInterval < time.Millisecond {
		errs = append(errs, input.Errorf("log-interval-ms", "must be > 0, got %d", c.LogInterval.Milliseconds()))
	}
	if c.ReceiveBufferBytes < 0 || c.ReceiveBufferBytes > maxReceiveBufferBytes {
		errs = append(errs, input.Errorf("receive-buffer-bytes", "must be between 0 (the kernel's default) and %d, got %d", maxReceiveBufferBytes, c.ReceiveBufferBytes))
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
		// Required, but verified if given and then required by
		// VerifyConnection, so the two refusals are told apart (and
		// counted) by reason: no certificate, or one that does not verify.
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
		cfg.VerifyConnection = requireClientCert
	}
	return cfg, nil
}

// errNoClientCert: mutual TLS and the client sent no certificate.
var errNoClientCert = errors.New("no client certificate")

func requireClientCert(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errNoClientCert
	}
	return nil
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
