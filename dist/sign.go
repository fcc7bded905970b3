package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// signRelease signs every artifact of res and SHA256SUMS with
// o.SigningKey and writes its public key as o.PublicKeyName. The keys and
// signatures are the agent's own (edge-agent package keygen, pubkey and
// sign, run from the host build): the scheme self-upgrade verifies, with
// one implementation. ed25519 signatures are deterministic, so a rebuild
// with the same key writes the same .sig bytes.
func signRelease(ctx context.Context, o Options, agent string, res *Result) error {
	if _, err := os.Stat(o.SigningKey); errors.Is(err, fs.ErrNotExist) && o.GenerateKey {
		if err := os.MkdirAll(filepath.Dir(o.SigningKey), 0o700); err != nil {
			return fmt.Errorf("dist: signing key: %w", err)
		}
		if _, err := run(ctx, agent, "package", "keygen", "--out", o.SigningKey); err != nil {
			return fmt.Errorf("dist: make signing key %s: %w", o.SigningKey, err)
		}
	}
	pub, err := run(ctx, agent, "package", "pubkey", "--key", o.SigningKey)
	if err != nil {
		return fmt.Errorf("dist: signing key %s: %w", o.SigningKey, err)
	}
	res.PublicKey = filepath.Join(o.OutDir, o.PublicKeyName)
	if err := os.WriteFile(res.PublicKey, pub, 0o644); err != nil {
		return fmt.Errorf("dist: write %s: %w", res.PublicKey, err)
	}
	paths := []string{res.Sums}
	for _, a := range res.Artifacts {
		paths = append(paths, a.Path)
	}
	for _, p := range paths {
		sig, err := run(ctx, agent, "package", "sign", "--key", o.SigningKey, "--version", o.Version, p)
		if err != nil {
			return fmt.Errorf("dist: sign %s: %w", filepath.Base(p), err)
		}
		if err := os.WriteFile(p+".sig", sig, 0o644); err != nil {
			return fmt.Errorf("dist: write %s.sig: %w", filepath.Base(p), err)
		}
		res.Signatures = append(res.Signatures, p+".sig")
	}
	return nil
}

// run runs the host's edge-agent and returns its standard output.
func run(ctx context.Context, agent string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, agent, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("edge-agent %s: %w: %s", args[0]+" "+args[1], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
