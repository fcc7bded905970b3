package edgesocket

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/relay"
)

// Config is the `type: edgesocket` input's section of agent.yaml.
type Config struct {
	// Listen is host:port to accept collectors on. Default 127.0.0.1:9700.
	Listen string `yaml:"listen"`
	// Tokens are the accepted tokens, each with a name the collector is
	// known by in logs, status and add-fields.
	Tokens []TokenConfig `yaml:"tokens"`
	// TokensFile names a file of `name token` lines (blank lines and
	// lines starting with # skipped), read at start and at each reload;
	// its tokens are accepted besides Tokens.
	TokensFile string `yaml:"tokens-file"`
	// TLS serves TLS, optionally requiring client certificates (mTLS).
	TLS TLSConfig `yaml:"tls"`
	// AllowPlaintext must be true to listen on a non-loopback address
	// without TLS: tokens and events would cross the network in clear.
	AllowPlaintext bool `yaml:"allow-plaintext"`
	// PacketMode is RAW (the payload is the event) or PACKET (an envelope,
	// compressed with whatever the sender chose, optionally encrypted).
	PacketMode codec.Mode `yaml:"packet-mode"`
	// AESSecretKeyBase64 decrypts encrypted PACKET payloads (32 bytes,
	// base64); AESSecretKeyFile holds it in a file instead, and wins.
	AESSecretKeyBase64 string `yaml:"aes-secret-key-base64"`
	AESSecretKeyFile   string `yaml:"aes-secret-key-file"`
	// AllowUnencrypted, in PACKET mode with a key, accepts envelopes with
	// encryption none; by default they are answered DECRYPT_FAILED.
	AllowUnencrypted bool `yaml:"allow-unencrypted"`
	// MaxConnections bounds the collectors connected at once; one more
	// is answered REJECTED. Default 1024.
	MaxConnections int `yaml:"max-connections"`
	// MaxLineBytes bounds one request line; a longer one is answered
	// BAD_REQUEST and the connection closed. Default 4 MiB.
	MaxLineBytes int `yaml:"max-line-bytes"`
	// MaxInFlight bounds the requests of one connection read ahead of
	// their replies. Default 64.
	MaxInFlight int `yaml:"max-in-flight"`
	// ReadTimeout bounds reading one request line once begun. Default 30s.
	ReadTimeout time.Duration `yaml:"read-timeout-ms"`
	// IdleTimeout closes a collector silent while it is owed nothing.
	// Default 5m.
	IdleTimeout time.Duration `yaml:"idle-timeout-ms"`
	// WriteTimeout bounds writing replies: a collector that does not read
	// them is closed. Default 10s.
	WriteTimeout time.Duration `yaml:"write-timeout-ms"`
	// AuthTimeout bounds a new connection's TLS handshake and token line.
	// Default 1s, as the engine.
	AuthTimeout time.Duration `yaml:"auth-timeout-ms"`
	// MaxUnauthenticated bounds the connections not yet authenticated; at
	// the bound a new one evicts an older one. Default 64.
	MaxUnauthenticated int `yaml:"max-unauthenticated"`
	// MaxUnauthenticatedPerSource bounds them per source address. Default 8.
	MaxUnauthenticatedPerSource int `yaml:"max-unauthenticated-per-source"`
	// AuthFailDelay is the wait before checking a token from an address
	// whose last attempt failed, doubling per failure up to
	// AuthFailDelayMax. Defaults 250ms and 5s.
	AuthFailDelay    time.Duration `yaml:"auth-fail-delay-ms"`
	AuthFailDelayMax time.Duration `yaml:"auth-fail-delay-max-ms"`
	// AuthLogInterval is how often failed authentications are logged, as
	// one line of counts. Default 10s.
	AuthLogInterval time.Duration `yaml:"auth-log-interval-ms"`
	// MaxPendingBytes bounds the events taken from collectors and not yet
	// handed to the queue; beyond it batches are answered QUEUE_FULL.
	// Default 4 MiB.
	MaxPendingBytes int `yaml:"max-pending-bytes"`
	// QueueFullRetry is the delay QUEUE_FULL replies ask for. Default 500ms.
	QueueFullRetry time.Duration `yaml:"queue-full-retry-ms"`
	// AddFields lists fields put into each event JSON object: token-name
	// (as "_relay_token") and peer-address ("_relay_peer"). Default none:
	// the event is stored byte-identical.
	AddFields []string `yaml:"add-fields"`
	_         struct{}
}

// TokenConfig is one entry of tokens.
type TokenConfig struct {
	Name string `yaml:"name"`
	// Token is the secret; TokenFile holds it in a file instead, and wins.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token-file"`
	_         struct{}
}

// TLSConfig is the listener's TLS.
type TLSConfig struct {
	CertFile string `yaml:"cert-file"`
	KeyFile  string `yaml:"key-file"`
	// ClientCAFile, when set, requires every collector to present a
	// certificate signed by one of these CAs (mTLS).
	ClientCAFile string `yaml:"client-ca-file"`
	_            struct{}
}

// Enabled reports whether TLS is configured.
func (t TLSConfig) Enabled() bool { return strings.TrimSpace(t.CertFile) != "" }

// Field names add-fields takes, and the JSON keys they add.
const (
	FieldTokenName   = "token-name"
	FieldPeerAddress = "peer-address"
	keyTokenName     = "_relay_token"
	keyPeerAddress   = "_relay_peer"
)

// Defaults and limits of the input's own settings; those of the listener
// come from transport/relay, their one source of truth.
const (
	DefaultListen          = "127.0.0.1:9700"
	DefaultMaxPendingBytes = 4 << 20
	DefaultQueueFullRetry  = 500 * time.Millisecond
)

// NewDefaultConfig returns the defaults; agent.yaml is decoded on top.
func NewDefaultConfig() *Config {
	return &Config{
		Listen:                      DefaultListen,
		PacketMode:                  codec.ModeRaw,
		MaxConnections:              relay.DefaultMaxConnections,
		MaxLineBytes:                relay.DefaultMaxLineBytes,
		MaxInFlight:                 relay.DefaultMaxInFlight,
		ReadTimeout:                 relay.DefaultReadTimeout,
		IdleTimeout:                 relay.DefaultIdleTimeout,
		WriteTimeout:                relay.DefaultWriteTimeout,
		AuthTimeout:                 relay.DefaultAuthTimeout,
		MaxUnauthenticated:          relay.DefaultMaxHandshakes,
		MaxUnauthenticatedPerSource: relay.DefaultMaxHandshakesPerSource,
		AuthFailDelay:               relay.DefaultAuthFailDelay,
		AuthFailDelayMax:            relay.DefaultAuthFailDelayMax,
		AuthLogInterval:             relay.DefaultAuthLogInterval,
		MaxPendingBytes:             DefaultMaxPendingBytes,
		QueueFullRetry:              DefaultQueueFullRetry,
	}
}

var (
	_ input.Config     = (*Config)(nil)
	_ input.PathAnchor = (*Config)(nil)
	_ input.Sourcer    = (*Config)(nil)
	_ input.Redacter   = (*Config)(nil)
)

// Validate reports every problem at once; each is an *input.FieldError.
// It reads the token and key files, so a missing one fails `config check`
// as it would fail the start.
func (c *Config) Validate() error {
	var errs []error
	if err := checkListen(c.Listen, c.TLS.Enabled(), c.AllowPlaintext); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.tokens(readFile); err != nil {
		errs = append(errs, err)
	}
	if c.TLS.Enabled() != (strings.TrimSpace(c.TLS.KeyFile) != "") {
		errs = append(errs, input.Errorf("tls", "cert-file and key-file go together: set both or neither"))
	}
	if c.TLS.ClientCAFile != "" && !c.TLS.Enabled() {
		errs = append(errs, input.Errorf("tls.client-ca-file", "needs tls.cert-file and tls.key-file: mTLS is TLS first"))
	}
	if c.PacketMode != codec.ModeRaw && c.PacketMode != codec.ModePacket {
		errs = append(errs, input.Errorf("packet-mode", "must be RAW or PACKET"))
	}
	if _, err := c.key(readFile); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkRange("max-connections", c.MaxConnections, 1, relay.MaxMaxConnections))
	errs = append(errs, checkRange("max-line-bytes", c.MaxLineBytes, relay.MinMaxLineBytes, relay.MaxMaxLineBytes))
	errs = append(errs, checkRange("max-in-flight", c.MaxInFlight, 1, relay.MaxMaxInFlight))
	errs = append(errs, checkRange("max-unauthenticated", c.MaxUnauthenticated, 1, relay.MaxMaxHandshakes))
	errs = append(errs, checkRange("max-unauthenticated-per-source", c.MaxUnauthenticatedPerSource, 1, max(1, c.MaxUnauthenticated)))
	errs = append(errs, checkRange("max-pending-bytes", c.MaxPendingBytes, 64<<10, 1<<30))
	for _, d := range []struct {
		key string
		v   time.Duration
		hi  time.Duration
	}{
		{"read-timeout-ms", c.ReadTimeout, 0}, {"idle-timeout-ms", c.IdleTimeout, 0}, {"write-timeout-ms", c.WriteTimeout, 0},
		{"queue-full-retry-ms", c.QueueFullRetry, 0}, {"auth-timeout-ms", c.AuthTimeout, relay.MaxAuthTimeout},
		{"auth-fail-delay-ms", c.AuthFailDelay, c.AuthFailDelayMax}, {"auth-fail-delay-max-ms", c.AuthFailDelayMax, relay.MaxAuthFailDelay},
		{"auth-log-interval-ms", c.AuthLogInterval, 0},
	} {
		if d.v <= 0 || d.hi > 0 && d.v > d.hi {
			errs = append(errs, input.Errorf(d.key, "must be > 0 and at most %d, got %d", d.hi.Milliseconds(), d.v.Milliseconds()))
		}
	}
	if c.AuthTimeout >= c.IdleTimeout && c.AuthTimeout > 0 {
		errs = append(errs, input.Errorf("auth-timeout-ms", "must be below idle-timeout-ms (%d), got %d", c.IdleTimeout.Milliseconds(), c.AuthTimeout.Milliseconds()))
	}
	if c.AllowUnencrypted && (c.PacketMode != codec.ModePacket || c.AESSecretKeyBase64 == "" && c.AESSecretKeyFile == "") {
		errs = append(errs, input.Errorf("allow-unencrypted", "applies to packet-mode PACKET with a key only"))
	}
	for i, f := range c.AddFields {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case FieldTokenName, FieldPeerAddress:
		default:
			errs = append(errs, input.Errorf(fmt.Sprintf("add-fields[%d]", i), "must be %s or %s, got %q", FieldTokenName, FieldPeerAddress, f))
		}
	}
	return errors.Join(errs...)
}

func checkRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return input.Errorf(key, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

// checkListen: host:port, and a non-loopback host needs TLS or the
// explicit opt-out.
func checkListen(listen string, tls, allowPlain bool) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(listen))
	if err != nil || port == "" {
		return input.Errorf("listen", "must be host:port, got %q", listen)
	}
	if !isLoopback(host) && !tls && !allowPlain {
		return input.Errorf("listen", "%q is reachable from other hosts: set tls (cert-file, key-file), or allow-plaintext: true to send tokens and events in clear, or listen on 127.0.0.1", listen)
	}
	return nil
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

// AnchorPaths resolves the token, key and TLS files against base.
func (c *Config) AnchorPaths(base string) {
	if base == "" {
		return
	}
	ps := []*string{&c.TokensFile, &c.AESSecretKeyFile, &c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile}
	for i := range c.Tokens {
		ps = append(ps, &c.Tokens[i].TokenFile)
	}
	for _, p := range ps {
		if v := strings.TrimSpace(*p); v != "" && !filepath.IsAbs(v) {
			*p = filepath.Join(base, v)
		}
	}
}

// Sources names where the input reads: its listen address.
func (c *Config) Sources() []string { return []string{"edgesocket://" + strings.TrimSpace(c.Listen)} }

// Redacted returns a copy with the tokens and the key replaced.
func (c *Config) Redacted() input.Config {
	r := *c
	r.Tokens = make([]TokenConfig, len(c.Tokens))
	for i, t := range c.Tokens {
		if t.Token != "" {
			t.Token = input.RedactedValue
		}
		r.Tokens[i] = t
	}
	if r.AESSecretKeyBase64 != "" {
		r.AESSecretKeyBase64 = input.RedactedValue
	}
	return &r
}

// addFields reports which fields add-fields asks for.
func (c *Config) addFields() (token, peer bool) {
	for _, f := range c.AddFields {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case FieldTokenName:
			token = true
		case FieldPeerAddress:
			peer = true
		}
	}
	return token, peer
}
