package config

import (
	"github.com/edge-agent/edge-agent/transport/codec"
)

// readQueueKey reads queue.encryption.key-file as the output's key files
// are read (readSecret) and decodes it as their keys are (codec.DecodeKey):
// the WAL's key is a base64 32-byte key like PACKET's.
func (d *decoder) readQueueKey(cfg *Config, readFile func(string) ([]byte, error)) {
	enc := &cfg.Queue.Encryption
	if enc.KeyFile == "" {
		return
	}
	const key = "queue.encryption.key-file"
	var readErr error
	b64 := d.readSecret(key, enc.KeyFile, func(p string) ([]byte, error) {
		b, err := readFile(p)
		readErr = err
		return b, err
	})
	if readErr != nil {
		return // readSecret reported it
	}
	k, err := codec.DecodeKey(b64)
	if err != nil {
		d.failf(key, "%s: %w", enc.KeyFile, err)
		return
	}
	enc.Key = k
}
