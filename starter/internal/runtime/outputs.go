package runtime

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/console"
)

// defaultSender builds the configured output. Neither kind connects here:
// the EdgeSocket client dials on its first Send, in the sender goroutine.
func defaultSender(cfg *config.Config, logger *slog.Logger) (transport.Sender, error) {
	o := &cfg.Output
	switch strings.ToLower(o.Type) {
	case config.OutputConsole:
		return console.New(logger), nil
	case config.OutputTransport:
	default:
		return nil, fmt.Errorf("output.type %q: want console or transport: %w", o.Type, config.ErrInvalid)
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	cc := client.DefaultConfig()
	cc.Endpoint = o.Endpoint
	cc.Token = o.Token
	cc.Logger = logger
	// Zero keeps the client's default; config.Validate already rejected
	// negative values.
	setDur := func(dst *time.Duration, v int64) {
		if v > 0 {
			*dst = ms(v)
		}
	}
	setDur(&cc.ConnectTimeout, o.ConnectTimeoutMs)
	setDur(&cc.ReadTimeout, o.ReadTimeoutMs)
	setDur(&cc.InitialBackoff, o.InitialBackoffMs)
	setDur(&cc.MaxBackoff, o.MaxBackoffMs)
	if o.MaxBatchSendAttempts > 0 {
		cc.MaxBatchSendAttempts = o.MaxBatchSendAttempts
	}
	if o.MaxReconnectCycles > 0 {
		cc.MaxReconnectCycles = o.MaxReconnectCycles
	}
	if o.MaxInFlight > 0 {
		cc.MaxInFlight = o.MaxInFlight
	}
	if o.TLS.Enabled {
		tc, err := client.TLSOptions{
			Enabled: true, CAFile: o.TLS.CAFile, CertFile: o.TLS.CertFile, KeyFile: o.TLS.KeyFile,
			ServerName: o.TLS.ServerName, InsecureSkipVerify: o.TLS.InsecureSkipVerify,
		}.Build()
		if err != nil {
			return nil, fmt.Errorf("output.tls: %w", err)
		}
		cc.TLS = tc
	}
	c, err := client.New(cc)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newEncoder builds the payload codec from output.packet-mode,
// compression, encryption and the key. The console output always gets RAW
// payloads: it is read by people.
func newEncoder(cfg *config.Config) (encoder, error) {
	o := &cfg.Output
	if strings.EqualFold(o.Type, config.OutputConsole) {
		return rawEncoder{}, nil
	}
	mode, err := codec.ParseMode(orDefault(o.PacketMode, "RAW"))
	if err != nil {
		return nil, fmt.Errorf("output.packet-mode: %w", err)
	}
	if mode == codec.ModeRaw {
		return rawEncoder{}, nil
	}
	opts := codec.Options{Mode: mode}
	if opts.Compression, err = codec.ParseCompression(o.Compression); err != nil {
		return nil, fmt.Errorf("output.compression: %w", err)
	}
	if opts.Encryption, err = codec.ParseEncryption(o.Encryption); err != nil {
		return nil, fmt.Errorf("output.encryption: %w", err)
	}
	if opts.Encryption != codec.EncryptionNone {
		// The error never quotes the key.
		if opts.Key, err = codec.DecodeKey(o.AESSecretKeyBase64); err != nil {
			return nil, fmt.Errorf("output.aes-secret-key-base64: %w", err)
		}
	}
	enc, err := codec.NewEncoder(opts)
	if err != nil {
		return nil, err
	}
	return enc, nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// clientStats is what the EdgeSocket client reports about its connections.
type clientStats interface{ Stats() client.Stats }
