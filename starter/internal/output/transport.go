package output

import (
	"encoding"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
	"github.com/edge-agent/edge-agent/transport/codec"
)

// TypeTransport sends to the engine's EdgeSocket source.
const TypeTransport = "transport"

// TransportConfig is the output section for output.type transport: the
// EdgeSocket client's options, the codec's, and what only the agent adds
// (secrets read from files, auth-type). Defaults, limits and checks are
// the client's and the codec's own.
type TransportConfig struct {
	Client client.Config `yaml:",inline"`
	// Endpoints lists several engines' host:port instead of endpoint
	// (one of the two): EndpointMode says how they are used (endpoints.go).
	Endpoints []string `yaml:"endpoints"`
	// EndpointMode is failover (the default; also when empty) or spread;
	// used only with endpoints.
	EndpointMode string `yaml:"endpoint-mode"`
	// TokenFile names a file holding the token; read at load, it wins
	// over token.
	TokenFile string `yaml:"token-file"`
	// AuthType is kept for the Java agent's files: only "token" exists.
	AuthType string `yaml:"auth-type"`
	// The codec's names: parsed by the codec when decoded, an error only
	// where used (see ifUsed).
	PacketMode  ifUsed[codec.Mode, *codec.Mode]               `yaml:"packet-mode"`
	Compression ifUsed[codec.Compression, *codec.Compression] `yaml:"compression"`
	Encryption  ifUsed[codec.Encryption, *codec.Encryption]   `yaml:"encryption"`
	// CompressionLevel is the codec's, checked by the codec where used.
	CompressionLevel int `yaml:"compression-level"`
	// AESSecretKeyBase64 is the base64 key, decoded by the codec.
	AESSecretKeyBase64 string `yaml:"aes-secret-key-base64"`
	// AESSecretKeyFile names a file holding the base64 key; it wins.
	AESSecretKeyFile string            `yaml:"aes-secret-key-file"`
	TLS              client.TLSOptions `yaml:"tls"`
	// OnRefusal is what the scheduler does when the engine answers
	// AUTH_FAILED or DECRYPT_FAILED (Pacing.OnRefusal).
	OnRefusal RefusalPolicy `yaml:"on-refusal"`
}

// RefusalPolicy is output.on-refusal: retry or exit.
type RefusalPolicy string

const (
	// RefusalRetry keeps reading into the WAL and retries at
	// output.max-backoff-ms until the engine accepts the agent again, so
	// a wrong token or key costs no data while an operator fixes it.
	RefusalRetry RefusalPolicy = "retry"
	// RefusalExit stops the agent (exit 4 or 5), as the Java agent does.
	RefusalExit RefusalPolicy = "exit"
)

// UnmarshalText accepts any case; an unknown value is kept for Validate
// to report, as every other name of this section is.
func (r *RefusalPolicy) UnmarshalText(b []byte) error {
	*r = RefusalPolicy(strings.ToLower(strings.TrimSpace(string(b))))
	return nil
}

// NewTransportConfig holds the client's and the codec's defaults.
func NewTransportConfig() *TransportConfig {
	s := codec.DefaultSettings()
	c := &TransportConfig{Client: client.DefaultConfig(), AuthType: "token", OnRefusal: RefusalRetry,
		Endpoints: []string{}, EndpointMode: ModeFailover}
	c.PacketMode.Value, c.Compression.Value, c.Encryption.Value = s.Mode, s.Compression, s.Encryption
	c.CompressionLevel = s.Level
	return c
}

// ifUsed holds a name its type parses when the file is decoded, but whose
// parse error counts only where the setting is used: RAW ignores
// compression and encryption, console all three (Java parity), so a stale
// value there must not stop the agent. The parser stays the codec's.
type ifUsed[T any, P interface {
	*T
	encoding.TextUnmarshaler
}] struct {
	Value T
	err   error
}

// UnmarshalText keeps the parse error for check; Value stays at its
// default when the name does not parse.
func (u *ifUsed[T, P]) UnmarshalText(b []byte) error {
	u.err = P(&u.Value).UnmarshalText(b)
	return nil
}

func (u *ifUsed[T, P]) check(key string) error {
	if u.err != nil {
		return &transport.FieldError{Key: key, Err: u.err}
	}
	return nil
}

// Codec returns the codec's settings.
func (c *TransportConfig) Codec() codec.Settings {
	return codec.Settings{Mode: c.PacketMode.Value, Compression: c.Compression.Value, Level: c.CompressionLevel,
		Encryption: c.Encryption.Value, KeyBase64: c.AESSecretKeyBase64}
}

// Validate runs the client's, the TLS options' and (in PACKET mode) the
// codec's checks, and checks auth-type and on-refusal. A problem with a secret read from
// a file is filed under the file's key.
func (c *TransportConfig) Validate() error {
	var errs []error
	errs = append(errs, c.validateEndpoints()...)
	cerr := c.Client.Validate()
	if len(c.Endpoints) > 0 {
		// Each listed endpoint was checked above, and endpoint must be
		// empty: the client's own endpoint check says nothing more.
		cerr = withoutKey(cerr, "endpoint")
	}
	errs = append(errs, c.fromFiles(cerr))
	if !isTokenAuth(c.AuthType) {
		errs = append(errs, transport.Errorf("auth-type", "must be \"token\" when set; %q is not supported", c.AuthType))
	}
	errs = append(errs, under("tls", c.TLS.Validate()))
	if c.OnRefusal != RefusalRetry && c.OnRefusal != RefusalExit {
		errs = append(errs, transport.Errorf("on-refusal", "must be retry or exit, got %q", string(c.OnRefusal)))
	}
	if err := c.PacketMode.check("packet-mode"); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if c.PacketMode.Value == codec.ModePacket {
		cerr, eerr := c.Compression.check("compression"), c.Encryption.check("encryption")
		errs = append(errs, cerr, eerr)
		if eerr == nil {
			errs = append(errs, c.fromFiles(c.Codec().Validate()))
		}
	}
	return errors.Join(errs...)
}

// validateEndpoints checks endpoints and endpoint-mode: exclusive with
// endpoint, each a host:port the client accepts, no repeats.
func (c *TransportConfig) validateEndpoints() []error {
	var errs []error
	mode := strings.ToLower(strings.TrimSpace(c.EndpointMode))
	if mode != "" && mode != ModeFailover && mode != ModeSpread {
		errs = append(errs, transport.Errorf("endpoint-mode", "must be %s or %s, got %q", ModeFailover, ModeSpread, c.EndpointMode))
	}
	if len(c.Endpoints) == 0 {
		return errs
	}
	if strings.TrimSpace(c.Client.Endpoint) != "" {
		errs = append(errs, transport.Errorf("endpoints", "endpoint and endpoints are both set: keep endpoint for one engine or endpoints for several, not both"))
	}
	seen := make(map[string]int, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		key := fmt.Sprintf("endpoints[%d]", i)
		ep = strings.TrimSpace(ep)
		one := c.Client
		one.Endpoint = ep
		for _, e := range unjoin(one.Validate()) {
			var fe *transport.FieldError
			if errors.As(e, &fe) && fe.Key == "endpoint" {
				errs = append(errs, &transport.FieldError{Key: key, Err: fe.Err})
			}
		}
		if j, dup := seen[ep]; dup && ep != "" {
			errs = append(errs, transport.Errorf(key, "%s is listed twice (also endpoints[%d])", ep, j))
		}
		seen[ep] = i
	}
	return errs
}

// withoutKey drops the keyed problems of key from err.
func withoutKey(err error, key string) error {
	var out []error
	for _, e := range unjoin(err) {
		var fe *transport.FieldError
		if e == nil || (errors.As(e, &fe) && fe.Key == key) {
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// endpointMode is endpoint-mode as set, failover when not.
func (c *TransportConfig) endpointMode() string {
	if m := strings.ToLower(strings.TrimSpace(c.EndpointMode)); m != "" {
		return m
	}
	return ModeFailover
}

// isTokenAuth: token is the only authentication the engine knows; an
// empty value means it.
func isTokenAuth(s string) bool {
	v := strings.TrimSpace(s)
	return v == "" || strings.EqualFold(v, "token")
}

// fromFiles files the problems of a secret that was read from a file
// under the file's key: that is what the operator must fix.
func (c *TransportConfig) fromFiles(err error) error {
	if err == nil {
		return nil
	}
	moved := map[string]string{}
	if c.TokenFile != "" {
		moved["token"] = "token-file"
	}
	if c.AESSecretKeyFile != "" && c.encrypted() {
		moved["aes-secret-key-base64"] = "aes-secret-key-file"
	}
	var out []error
	for _, e := range unjoin(err) {
		var fe *transport.FieldError
		if errors.As(e, &fe) {
			if to, ok := moved[fe.Key]; ok {
				e = &transport.FieldError{Key: to, Err: fe.Err}
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// encrypted reports whether the key is used: PACKET with an encryption.
func (c *TransportConfig) encrypted() bool {
	return c.PacketMode.err == nil && c.PacketMode.Value == codec.ModePacket &&
		c.Encryption.err == nil && c.Encryption.Value != codec.EncryptionNone
}

// Pacing is the client's, with on-refusal.
func (c *TransportConfig) Pacing() Pacing {
	cc := &c.Client
	return Pacing{MaxInFlight: cc.MaxInFlight, InitialBackoff: cc.InitialBackoff, MaxBackoff: cc.MaxBackoff,
		OnRefusal: c.OnRefusal}
}

// Redacted hides the token and the key.
func (c *TransportConfig) Redacted() Config {
	r := *c
	redact(&r.Client.Token)
	redact(&r.AESSecretKeyBase64)
	return &r
}

func redact(s *string) {
	if *s != "" {
		*s = RedactedValue
	}
}

// SecretFiles lists the token file and, when the key is used, the key
// file.
func (c *TransportConfig) SecretFiles() []Secret {
	out := []Secret{{Key: "token", FileKey: "token-file", File: c.TokenFile, Value: &c.Client.Token}}
	if c.encrypted() {
		out = append(out, Secret{Key: "aes-secret-key-base64", FileKey: "aes-secret-key-file",
			File: c.AESSecretKeyFile, Value: &c.AESSecretKeyBase64})
	}
	return out
}

// AnchorPaths resolves the secret and TLS files against the install root.
func (c *TransportConfig) AnchorPaths(base string) {
	for _, p := range []*string{&c.TokenFile, &c.AESSecretKeyFile, &c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile} {
		*p = paths.Resolve(base, strings.TrimSpace(*p))
	}
}

// Advice warns about a listen address as the destination and about an
// unverified engine certificate.
func (c *TransportConfig) Advice() []error {
	var out []error
	listen := func(key, ep string) {
		if host, _, err := net.SplitHostPort(strings.TrimSpace(ep)); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				out = append(out, transport.Errorf(key, "%s is a listen address, not a destination: use the engine host's routable address", host))
			}
		}
	}
	listen("endpoint", c.Client.Endpoint)
	for i, ep := range c.Endpoints {
		listen(fmt.Sprintf("endpoints[%d]", i), ep)
	}
	if c.TLS.Enabled && c.TLS.InsecureSkipVerify {
		out = append(out, transport.Errorf("tls.insecure-skip-verify", "the engine's certificate is not verified: the token can be stolen by anyone on the path"))
	}
	return out
}

// NewTransportFactory returns the factory of the EdgeSocket output.
func NewTransportFactory() Factory { return transportFactory{} }

type transportFactory struct{}

func (transportFactory) Type() string             { return TypeTransport }
func (transportFactory) NewDefaultConfig() Config { return NewTransportConfig() }

// Create builds the EdgeSocket client and, in PACKET mode, the codec; it
// checks cfg first, since a Config built in code may skip Load.
func (transportFactory) Create(cfg Config, set Settings) (transport.Sender, Encoder, error) {
	c, ok := cfg.(*TransportConfig)
	if !ok {
		return nil, nil, fmt.Errorf("transport output: config is %T, want *output.TransportConfig", cfg)
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	opts, err := c.Codec().Options()
	if err != nil {
		return nil, nil, err
	}
	var enc Encoder
	if opts.Mode == codec.ModePacket {
		if enc, err = codec.NewEncoder(opts); err != nil {
			return nil, nil, err
		}
	}
	cc := c.Client
	if cc.TLS, err = c.TLS.Build(); err != nil {
		return nil, nil, fmt.Errorf("output.tls: %w", err)
	}
	cc.Logger = set.Logger
	cc.Checkpoint = set.Checkpoint
	if set.Checkpoint {
		if err := c.CheckCheckpoint(); err != nil {
			return nil, nil, err
		}
	}
	if len(c.Endpoints) == 0 {
		snd, err := client.New(cc)
		if err != nil {
			return nil, nil, err
		}
		return snd, enc, nil
	}
	// One client per endpoint, each leaving after a few connect attempts
	// for the next (multiReconnectCycles).
	cc.MaxReconnectCycles = min(cc.MaxReconnectCycles, multiReconnectCycles)
	addrs := make([]string, len(c.Endpoints))
	clients := make([]endpointClient, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		one := cc
		one.Endpoint = strings.TrimSpace(ep)
		if one.TLS != nil {
			one.TLS = one.TLS.Clone()
		}
		cl, err := client.New(one)
		if err != nil {
			for _, made := range clients[:i] {
				_ = made.Close()
			}
			return nil, nil, fmt.Errorf("output.endpoints[%d]: %w", i, err)
		}
		addrs[i], clients[i] = one.Endpoint, cl
	}
	return newEndpoints(c.endpointMode(), addrs, clients, cc.MaxBackoff, set.Logger, nil), enc, nil
}

// under files keyed problems of a subsection under its name.
func under(section string, err error) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range unjoin(err) {
		var fe *transport.FieldError
		if errors.As(e, &fe) {
			e = &transport.FieldError{Key: section + "." + fe.Key, Err: fe.Err}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// unjoin undoes errors.Join, nested or not.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// Destination is the engine's host:port, or the list's joined with ","
// (output.Destination).
func (c *TransportConfig) Destination() string {
	if len(c.Endpoints) > 0 {
		return strings.Join(c.Endpoints, ",")
	}
	return c.Client.Endpoint
}

var _ Checkpointer = (*TransportConfig)(nil)

// CheckCheckpoint: CHECKPOINT delivery needs one endpoint. Each engine's
// job has checkpoints of its own: a watermark from one says nothing about
// the rows another received.
func (c *TransportConfig) CheckCheckpoint() error {
	if len(c.Endpoints) > 0 {
		return transport.Errorf("endpoints", "agent.delivery-guarantee CHECKPOINT delivers to one job: use output.endpoint, not output.endpoints")
	}
	return nil
}
