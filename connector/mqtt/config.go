package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// Payload modes.
const (
	PayloadText = "text"
	PayloadJSON = "json"
)

// Protocol versions (protocol-version).
const (
	Protocol311 = "3.1.1"
	Protocol5   = "5"
)

// Defaults and limits: the one place each is written.
const (
	DefaultQoS             = 1
	DefaultTopicField      = "topic"
	DefaultMaxPendingBytes = 4 << 20
	DefaultKeepAlive       = 30 * time.Second
	DefaultConnectTimeout  = 10 * time.Second
	DefaultMaxReconnect    = 30 * time.Second
	// DefaultSessionExpiry keeps an MQTT 5 session over a long weekend
	// without the agent.
	DefaultSessionExpiry = 7 * 24 * time.Hour
	// maxSessionExpiry is MQTT 5's largest interval (0xFFFFFFFF seconds:
	// the session never expires).
	maxSessionExpiry = time.Duration(1<<32-1) * time.Second
	// maxTopicBytes is MQTT's limit of a UTF-8 string.
	maxTopicBytes = 65535
)

// Config is the `input` section for `type: mqtt`; yaml tags are the keys.
type Config struct {
	// Brokers are URLs: tcp:// or mqtt:// (plain), ssl://, tls:// or
	// mqtts:// (TLS). The client connects to the first that answers, in
	// order, and moves on when one goes away.
	Brokers []string `yaml:"brokers"`
	// Topics are subscription filters; + and # wildcards allowed.
	Topics []string `yaml:"topics"`
	// QoS is the subscription's maximum QoS: 0, 1 (default) or 2. At 0
	// nothing is acknowledged and a crash loses what was not stored.
	QoS int `yaml:"qos"`
	// ClientID is the session's id at the broker. Default
	// edge-agent-<agent id>-<input id>: stable across restarts, so a
	// persistent session finds its messages.
	ClientID string `yaml:"client-id"`
	// ProtocolVersion is the MQTT version spoken: 3.1.1 (default) or 5.
	ProtocolVersion string `yaml:"protocol-version"`
	// CleanSession false (default) keeps the session and its queued
	// messages at the broker while the agent is away. With MQTT 5 it is
	// the connect's clean start flag.
	CleanSession bool `yaml:"clean-session"`
	// SessionExpiry (MQTT 5) is how long the broker keeps the session
	// after the connection ends; whole seconds. Default 7 days. 0 ends
	// the session with the connection: a stopped agent loses what the
	// broker held for it. MQTT 3.1.1 sessions last as the broker says.
	SessionExpiry time.Duration `yaml:"session-expiry-ms"`
	// Username and Password authenticate; PasswordFile holds the password
	// in a file instead, and wins.
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password-file"`
	// TLS applies to ssl://, tls:// and mqtts:// brokers.
	TLS TLSConfig `yaml:"tls"`
	// Payload: text (default: the payload as a JSON string in "message")
	// or json (parsed into "payload"; a payload that is not JSON goes to
	// "message" with "parse_error").
	Payload string `yaml:"payload"`
	// TopicField is the event key holding the message's topic. Default
	// "topic"; "" leaves the topic out.
	TopicField string `yaml:"topic-field"`
	// MaxPendingBytes bounds the messages taken and not yet handed to the
	// queue. Default 4 MiB.
	MaxPendingBytes int `yaml:"max-pending-bytes"`
	// KeepAlive is the MQTT keep-alive. Default 30s.
	KeepAlive time.Duration `yaml:"keep-alive-ms"`
	// ConnectTimeout bounds one connection attempt. Default 10s.
	ConnectTimeout time.Duration `yaml:"connect-timeout-ms"`
	// MaxReconnectInterval caps the wait between reconnection attempts.
	// Default 30s.
	MaxReconnectInterval time.Duration `yaml:"max-reconnect-interval-ms"`
	_                    struct{}
}

// TLSConfig is the client's TLS towards the broker.
type TLSConfig struct {
	// CAFile holds the CAs the broker's certificate must chain to;
	// default the system's.
	CAFile string `yaml:"ca-file"`
	// CertFile and KeyFile are the client certificate, for brokers that
	// authenticate clients by certificate.
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// ServerName overrides the name checked in the broker's certificate
	// (default: the broker URL's host).
	ServerName string `yaml:"server-name"`
	_          struct{}
}

// NewDefaultConfig returns the defaults; agent.yaml is decoded on top.
func NewDefaultConfig() *Config {
	return &Config{
		QoS:                  DefaultQoS,
		ProtocolVersion:      Protocol311,
		SessionExpiry:        DefaultSessionExpiry,
		Payload:              PayloadText,
		TopicField:           DefaultTopicField,
		MaxPendingBytes:      DefaultMaxPendingBytes,
		KeepAlive:            DefaultKeepAlive,
		ConnectTimeout:       DefaultConnectTimeout,
		MaxReconnectInterval: DefaultMaxReconnect,
	}
}

var (
	_ input.Config     = (*Config)(nil)
	_ input.PathAnchor = (*Config)(nil)
	_ input.Sourcer    = (*Config)(nil)
	_ input.Redacter   = (*Config)(nil)
	_ input.Adviser    = (*Config)(nil)
)

// Validate reports every problem at once; each is an *input.FieldError.
// It reads the password and TLS files, so a missing one fails `config
// check` as it would fail the start.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, input.Errorf("brokers", "set at least one broker URL, e.g. tcp://127.0.0.1:1883"))
	}
	for i, b := range c.Brokers {
		if _, _, err := parseBroker(b); err != nil {
			errs = append(errs, input.Errorf(fmt.Sprintf("brokers[%d]", i), "%v", err))
		}
	}
	if len(c.Topics) == 0 {
		errs = append(errs, input.Errorf("topics", "set at least one topic filter, e.g. site/#"))
	}
	for i, t := range c.Topics {
		if err := checkFilter(t); err != nil {
			errs = append(errs, input.Errorf(fmt.Sprintf("topics[%d]", i), "%v", err))
		}
	}
	if c.QoS < 0 || c.QoS > 2 {
		errs = append(errs, input.Errorf("qos", "must be 0, 1 or 2, got %d", c.QoS))
	}
	switch c.ProtocolVersion {
	case Protocol311, Protocol5:
	default:
		errs = append(errs, input.Errorf("protocol-version", "must be %s or %s, got %q", Protocol311, Protocol5, c.ProtocolVersion))
	}
	if c.SessionExpiry < 0 || c.SessionExpiry > maxSessionExpiry {
		errs = append(errs, input.Errorf("session-expiry-ms", "must be between 0 and %d, got %d", maxSessionExpiry.Milliseconds(), c.SessionExpiry.Milliseconds()))
	} else if c.SessionExpiry%time.Second != 0 {
		errs = append(errs, input.Errorf("session-expiry-ms", "MQTT counts it in whole seconds: use a multiple of 1000, got %d", c.SessionExpiry.Milliseconds()))
	}
	if len(c.ClientID) > maxTopicBytes {
		errs = append(errs, input.Errorf("client-id", "is %d bytes, MQTT allows %d", len(c.ClientID), maxTopicBytes))
	}
	if c.Password != "" || c.PasswordFile != "" {
		if c.Username == "" {
			errs = append(errs, input.Errorf("username", "a password needs a username"))
		}
	}
	if _, err := c.password(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.tlsConfig(); err != nil {
		errs = append(errs, err)
	}
	switch c.Payload {
	case PayloadText, PayloadJSON:
	default:
		errs = append(errs, input.Errorf("payload", "must be %s or %s, got %q", PayloadText, PayloadJSON, c.Payload))
	}
	if strings.ContainsAny(c.TopicField, "\"\\\x00\n") {
		errs = append(errs, input.Errorf("topic-field", "must be a plain key, without quotes, backslashes or control bytes"))
	}
	if c.MaxPendingBytes < 64<<10 || c.MaxPendingBytes > 1<<30 {
		errs = append(errs, input.Errorf("max-pending-bytes", "must be between %d and %d, got %d", 64<<10, 1<<30, c.MaxPendingBytes))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
		min time.Duration
	}{{"keep-alive-ms", c.KeepAlive, time.Second}, {"connect-timeout-ms", c.ConnectTimeout, time.Millisecond}, {"max-reconnect-interval-ms", c.MaxReconnectInterval, time.Millisecond}} {
		if d.v < d.min {
			errs = append(errs, input.Errorf(d.key, "must be at least %d, got %d", d.min.Milliseconds(), d.v.Milliseconds()))
		}
	}
	return errors.Join(errs...)
}

// parseBroker checks one broker URL and reports whether it uses TLS.
func parseBroker(s string) (u *url.URL, secure bool, err error) {
	u, err = url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, false, fmt.Errorf("not a URL: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "tcp", "mqtt":
	case "ssl", "tls", "mqtts":
		secure = true
	default:
		return nil, false, fmt.Errorf("scheme must be tcp, mqtt, ssl, tls or mqtts, got %q (write e.g. tcp://127.0.0.1:1883)", u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, false, fmt.Errorf("must name a host and a port, e.g. %s://127.0.0.1:1883", u.Scheme)
	}
	return u, secure, nil
}

// checkFilter checks a subscription filter as MQTT 3.1.1 section 4.7
// does: # alone, last; + a whole level; not empty; no NUL.
func checkFilter(f string) error {
	if f == "" {
		return errors.New("a topic filter is not empty")
	}
	if len(f) > maxTopicBytes {
		return fmt.Errorf("is %d bytes, MQTT allows %d", len(f), maxTopicBytes)
	}
	if strings.ContainsRune(f, 0) {
		return errors.New("holds a NUL byte")
	}
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1:
			return fmt.Errorf("# must be the last level, at level %d of %d", i+1, len(levels))
		case strings.Contains(l, "#") && l != "#":
			return fmt.Errorf("# must be a whole level, level %d is %q", i+1, l)
		case strings.Contains(l, "+") && l != "+":
			return fmt.Errorf("+ must be a whole level, level %d is %q", i+1, l)
		}
	}
	return nil
}

// password is the configured password, from its file when one is named.
func (c *Config) password() (string, error) {
	if c.PasswordFile == "" {
		return c.Password, nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", input.Errorf("password-file", "cannot read: %v", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// tlsConfig is the client's TLS, nil when no broker uses TLS and nothing
// is set.
func (c *Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if t.CAFile == "" && t.CertFile == "" && t.KeyFile == "" && t.ServerName == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, input.Errorf("tls.ca-file", "cannot read: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, input.Errorf("tls.ca-file", "%s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, input.Errorf("tls", "cert-file and key-file go together: set both or neither")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, input.Errorf("tls", "load cert-file and key-file: %v", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Advice warns of an MQTT 5 session that ends with the connection, and
// of a password sent in clear to a broker off this host.
func (c *Config) Advice() []input.FieldError {
	var out []input.FieldError
	if c.ProtocolVersion == Protocol5 && !c.CleanSession && c.SessionExpiry == 0 && c.QoS > 0 {
		out = append(out, input.FieldError{Key: "session-expiry-ms",
			Err: errors.New("0 ends the MQTT 5 session with the connection: the broker keeps nothing for the agent while it is down; set it above 0 (default 7 days)")})
	}
	if c.Password == "" && c.PasswordFile == "" {
		return out
	}
	for i, b := range c.Brokers {
		u, secure, err := parseBroker(b)
		if err != nil || secure {
			continue
		}
		if ip := net.ParseIP(u.Hostname()); !strings.EqualFold(u.Hostname(), "localhost") && (ip == nil || !ip.IsLoopback()) {
			out = append(out, input.FieldError{Key: fmt.Sprintf("brokers[%d]", i),
				Err: fmt.Errorf("%s is reached without TLS: the password crosses the network in clear; use ssl:// or mqtts://", u.Redacted())})
		}
	}
	return out
}

// AnchorPaths resolves the password and TLS files against base.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	for _, p := range []*string{&c.PasswordFile, &c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile} {
		if v := strings.TrimSpace(*p); v != "" && !filepath.IsAbs(v) {
			*p = filepath.Join(base, v)
		}
	}
}

// Sources names the brokers and topics read (no credentials: a URL's
// user info is dropped).
func (c *Config) Sources() []string {
	var out []string
	for _, b := range c.Brokers {
		u, _, err := parseBroker(b)
		if err != nil {
			continue
		}
		for _, t := range c.Topics {
			out = append(out, u.Scheme+"://"+u.Host+"/"+t)
		}
	}
	return out
}

// Redacted returns a copy with the password replaced.
func (c *Config) Redacted() input.Config {
	r := *c
	if r.Password != "" {
		r.Password = input.RedactedValue
	}
	r.Brokers = make([]string, len(c.Brokers))
	for i, b := range c.Brokers {
		if u, err := url.Parse(b); err == nil && u.User != nil {
			r.Brokers[i] = u.Redacted()
		} else {
			r.Brokers[i] = b
		}
	}
	return &r
}

// clientID is client-id, or the default built from the agent's and the
// input's ids.
func (c *Config) clientID(set input.Settings) string {
	if c.ClientID != "" {
		return c.ClientID
	}
	return "edge-agent-" + set.AgentID + "-" + set.ID
}
