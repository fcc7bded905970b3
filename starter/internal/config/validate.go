package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// Limits that are ours, not the Java agent's.
const (
	maxInFlightLimit = 4096
)

// Validate reports every problem at once (errors.Join of *FieldError, each
// wrapping ErrInvalid), naming the full key and, for a loaded Config, the
// line:column where it is written.
func (c *Config) Validate() error {
	var p problems
	c.validate(&p)
	return p.join()
}

// checker adds problems keyed by canonical key, skipping keys that already
// have one (a type error already said what is wrong with that key).
type checker struct {
	c *Config
	p *problems
}

func (k checker) fail(canonical string, err error) {
	fe := k.c.where.fieldError(canonical, err)
	if k.p.has(fe.Key) {
		return
	}
	k.p.add(fe)
}

func (k checker) failf(canonical, format string, args ...any) {
	k.fail(canonical, fmt.Errorf(format, args...))
}

func (k checker) positive(canonical string, v int64) {
	if v <= 0 {
		k.failf(canonical, "must be > 0, got %d", v)
	}
}

func (k checker) nonNegative(canonical string, v int64) {
	if v < 0 {
		k.failf(canonical, "must be >= 0, got %d", v)
	}
}

func (k checker) enum(canonical, v string, parse func(string) (string, bool), allowed string) {
	if _, ok := parse(v); !ok {
		k.failf(canonical, "must be %s, got %q", allowed, v)
	}
}

func (c *Config) validate(p *problems) {
	k := checker{c: c, p: p}
	c.validateAgent(k)
	c.validateInput(k)
	c.validateQueue(k)
	c.validateOutput(k)
	c.validateLog(k)
}

func (c *Config) validateAgent(k checker) {
	a := c.Agent
	if _, ok := parseDelivery(a.DeliveryGuarantee); !ok {
		k.failf("agent.delivery-guarantee", "Unsupported agent.delivery-guarantee %q: use BEST_EFFORT (or best-effort, best_effort) or NON (or NONE)", a.DeliveryGuarantee)
	}
	k.positive("agent.idle-sleep-ms", a.IdleSleepMs)
	k.positive("agent.bulk-max-size", int64(a.BulkMaxSize))
	k.positive("agent.flush-interval-ms", a.FlushIntervalMs)
	k.positive("agent.shutdown-timeout-ms", a.ShutdownTimeoutMs)
}

// keyedError is how a component's Validate names the key of a problem,
// relative to the component's section (check.FieldError,
// input.FieldError, transport.FieldError all have this shape).
type keyedError interface {
	error
	FieldKey() string
	Unwrap() error
}

// component files the problems of a component's Validate under section,
// with the position of each key.
func (k checker) component(section string, err error) {
	if err == nil {
		return
	}
	for _, e := range flatten(err) {
		var ke keyedError
		if errors.As(e, &ke) {
			k.fail(join(section, ke.FieldKey()), ke.Unwrap())
			continue
		}
		k.fail(section, e)
	}
}

func (c *Config) validateInput(k checker) {
	if c.Input == nil {
		k.fail("input", errInputMissing())
		return
	}
	k.component("input", c.Input.Validate())
}

// flatten undoes errors.Join (possibly nested).
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func (c *Config) validateQueue(k checker) {
	q, r := c.Queue, c.Retry
	k.component("queue", q.Options.Validate())
	k.positive("queue.poll-batch-size", int64(q.PollBatchSize))
	k.positive("queue.cleanup-batch-size", int64(q.CleanupBatchSize))
	k.nonNegative("queue.acked-retention-ms", q.AckedRetentionMs)
	k.positive("queue.resurrect-batch-size", int64(q.ResurrectBatchSize))
	k.positive("queue.resurrect-interval-ms", q.ResurrectIntervalMs)
	k.nonNegative("queue.max-bytes", q.MaxBytes)

	k.positive("retry.max-attempts", int64(r.MaxAttempts))
	k.positive("retry.backoff-ms", r.BackoffMs)
	k.positive("retry.backoff-max-ms", r.BackoffMaxMs)
	if r.BackoffMs > 0 && r.BackoffMaxMs > 0 && r.BackoffMaxMs < r.BackoffMs {
		k.failf("retry.backoff-max-ms", "retry.backoff-max-ms (%d) must be >= retry.backoff-ms (%d)", r.BackoffMaxMs, r.BackoffMs)
	}
}

func (c *Config) validateOutput(k checker) {
	o := c.Output
	k.enum("output.type", o.Type, parseOutputType, "console or transport")
	// Numeric settings are checked for every output type: a wrong value
	// is a mistake even while it is unused.
	k.positive("output.connect-timeout-ms", o.ConnectTimeoutMs)
	k.positive("output.read-timeout-ms", o.ReadTimeoutMs)
	k.positive("output.max-batch-send-attempts", int64(o.MaxBatchSendAttempts))
	k.positive("output.initial-backoff-ms", o.InitialBackoffMs)
	k.positive("output.max-backoff-ms", o.MaxBackoffMs)
	if o.InitialBackoffMs > 0 && o.MaxBackoffMs > 0 && o.MaxBackoffMs < o.InitialBackoffMs {
		k.failf("output.max-backoff-ms", "output.max-backoff-ms (%d) must be >= output.initial-backoff-ms (%d)", o.MaxBackoffMs, o.InitialBackoffMs)
	}
	k.positive("output.max-reconnect-cycles", int64(o.MaxReconnectCycles))
	if o.MaxInFlight < 1 || o.MaxInFlight > maxInFlightLimit {
		k.failf("output.max-in-flight", "must be between 1 and %d, got %d", maxInFlightLimit, o.MaxInFlight)
	}

	if t, _ := parseOutputType(o.Type); t != OutputTransport {
		// console needs no endpoint, token or encryption (Java parity).
		return
	}
	if err := checkEndpoint(o.Endpoint); err != nil {
		k.fail("output.endpoint", err)
	}
	tokenKey := "output.token"
	if o.TokenFile != "" {
		tokenKey = "output.token-file"
	}
	switch {
	case o.Token == "" && o.TokenFile != "":
		k.failf(tokenKey, "the file holds no token")
	case o.Token == "":
		k.failf(tokenKey, "output.token is required when output.type is transport (or set output.token-file)")
	default:
		// The token travels on one protocol line: the transport's own
		// check, run here so `config check` refuses what `start` would.
		if err := protocol.CheckToken(o.Token); err != nil {
			k.failf(tokenKey, "%v: the token must be a single line", err)
		}
	}
	if _, ok := parseAuthType(o.AuthType); !ok {
		k.failf("output.auth-type", "output.auth-type must be \"token\" when set; %q is not supported", o.AuthType)
	}
	c.validateTLS(k)
	mode, ok := parsePacketMode(o.PacketMode)
	if !ok {
		k.failf("output.packet-mode", "must be RAW or PACKET, got %q", o.PacketMode)
		return
	}
	if mode != PacketModePacket {
		// RAW sends the event JSON as is: compression, encryption and
		// the key are ignored, not validated (Java parity).
		return
	}
	k.enum("output.compression", o.Compression, parseCompression, "none, gzip, zlib or deflate")
	enc, ok := parseEncryption(o.Encryption)
	if !ok {
		k.failf("output.encryption", "must be none, aes_gcm or chacha20_poly1305, got %q", o.Encryption)
		return
	}
	if enc != EncryptionNone {
		c.validateKey(k, enc)
	}
}

// validateKey never shows the key, only its length.
func (c *Config) validateKey(k checker, enc string) {
	o := c.Output
	key := "output.aes-secret-key-base64"
	if o.AESSecretKeyFile != "" {
		key = "output.aes-secret-key-file"
	}
	if o.AESSecretKeyBase64 == "" {
		if o.AESSecretKeyFile != "" {
			k.failf(key, "the file holds no key")
			return
		}
		k.failf(key, "output.aes-secret-key-base64 is required when output.encryption is %q (or set output.aes-secret-key-file)", enc)
		return
	}
	// The encoder's own decoder: what passes here is what start accepts.
	if _, err := codec.DecodeKey(o.AESSecretKeyBase64); err != nil {
		k.fail(key, err)
	}
}

func (c *Config) validateTLS(k checker) {
	t := c.Output.TLS
	if !t.Enabled {
		return
	}
	if t.CertFile != "" && t.KeyFile == "" {
		k.failf("output.tls.key-file", "output.tls.key-file is required when output.tls.cert-file is set")
	}
	if t.KeyFile != "" && t.CertFile == "" {
		k.failf("output.tls.cert-file", "output.tls.cert-file is required when output.tls.key-file is set")
	}
}

// checkEndpoint wants host:port with a port in 1..65535. The value may be
// shown: an address is not a secret.
func checkEndpoint(ep string) error {
	if ep == "" {
		return errors.New("output.endpoint is required when output.type is transport (host:port of the engine's EdgeSocket source)")
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" {
		return fmt.Errorf("expected host:port, got %q", ep)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("invalid port in %q: must be 1..65535", ep)
	}
	return nil
}

func (c *Config) validateLog(k checker) {
	l := c.Log
	k.enum("log.level", l.Level, parseLogLevel, "debug, info, warn or error")
	k.enum("log.format", l.Format, parseLogFormat, "json or text")
	if l.File == "" {
		k.failf("log.file", "must not be empty")
	}
	k.positive("log.max-size-mb", int64(l.MaxSizeMB))
	k.nonNegative("log.max-backups", int64(l.MaxBackups))
	k.nonNegative("log.max-age-days", int64(l.MaxAgeDays))
}
