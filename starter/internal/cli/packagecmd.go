package cli

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// packageCommand makes the keys and signatures of self-upgrade packages
// (management.opamp.packages).
func (a *agentCLI) packageCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "package",
		Usage:     "keys and signatures for self-upgrade over OpAMP",
		UsageText: "edge-agent package keygen --out KEY | edge-agent package pubkey --key KEY | edge-agent package sign --key KEY --version V [--allow-downgrade] FILE",
		Subcommands: []*ucli.Command{{
			Name:      "keygen",
			Usage:     "make an ed25519 key pair: the private key into --out, the public key printed",
			UsageText: "edge-agent package keygen --out FILE",
			Description: `Writes the private key (base64 of the 32-byte seed, mode 0600; never
overwrites a file) and prints the public key, the value of
management.opamp.packages.public-key. Keep the private key off the agents.

Examples:
   edge-agent package keygen --out release.key`,
			Flags:        []ucli.Flag{&ucli.StringFlag{Name: "out", Required: true, Usage: "private key file to create", TakesFile: true}},
			OnUsageError: usageError,
			Action:       a.packageKeygen,
		}, {
			Name:      "pubkey",
			Usage:     "print the public key of a private key file",
			UsageText: "edge-agent package pubkey --key FILE",
			Description: `Prints the public key (standard base64 of its 32 bytes) that verifies
what the private key signs: the value of management.opamp.packages.public-key
and of verify-release --public-key.

Examples:
   edge-agent package pubkey --key release.key`,
			Flags:        []ucli.Flag{&ucli.StringFlag{Name: "key", Required: true, Usage: "private key file (from keygen)", TakesFile: true}},
			OnUsageError: usageError,
			Action:       a.packagePubkey,
		}, {
			Name:      "sign",
			Usage:     "print the SHA-256 and the signature of a package file for an OpAMP offer",
			UsageText: "edge-agent package sign --key KEY --version V [--allow-downgrade] FILE",
			Description: `Signs "version, SHA-256 of FILE, allow-downgrade" with the private key and
prints three lines: version, sha256 (hex: the offer's content_hash) and
signature (base64 of the 64 bytes: the offer's signature). An agent
installs an older version only when the signature was made with
--allow-downgrade. The same three lines, saved as FILE.sig, are the
detached signature a release ships beside each artifact (verify-release).

Examples:
   edge-agent package sign --key release.key --version 1.4.0 bin/edge-agent`,
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "key", Required: true, Usage: "private key file (from keygen)", TakesFile: true},
				&ucli.StringFlag{Name: "version", Required: true, Usage: "the version the file is"},
				&ucli.BoolFlag{Name: "allow-downgrade", Usage: "let agents on a newer version install it"},
			},
			OnUsageError: usageError,
			Action:       a.packageSign,
		}},
		OnUsageError: usageError,
	}
}

func (a *agentCLI) packageKeygen(c *ucli.Context) error {
	out := c.String("out")
	if _, err := os.Stat(out); err == nil {
		return withCode(exitcode.Usage, fmt.Errorf("--out %s exists; keygen never overwrites a key", out))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	pub, priv, err := upgrade.GenerateKey(nil)
	if err != nil {
		return err
	}
	if err := identity.WriteAtomic(out, upgrade.EncodePrivateKey(priv), 0o600); err != nil {
		return fmt.Errorf("write private key: %w", err)
	}
	fmt.Fprintf(a.env.Stdout, "private key: %s\npublic key: %s\n", out, upgrade.EncodePublicKey(pub))
	return nil
}

func (a *agentCLI) packagePubkey(c *ucli.Context) error {
	if c.NArg() != 0 {
		return withCode(exitcode.Usage, fmt.Errorf("package pubkey takes no arguments, got %q", c.Args().Slice()))
	}
	key, err := upgrade.ReadPrivateKey(c.String("key"))
	if err != nil {
		return err
	}
	pub, _ := key.Public().(ed25519.PublicKey)
	fmt.Fprintln(a.env.Stdout, upgrade.EncodePublicKey(pub))
	return nil
}

func (a *agentCLI) packageSign(c *ucli.Context) error {
	if c.NArg() != 1 {
		return withCode(exitcode.Usage, fmt.Errorf("package sign takes one FILE, got %q", c.Args().Slice()))
	}
	version := c.String("version")
	if !upgrade.ValidVersion(version) {
		return withCode(exitcode.Usage, fmt.Errorf("--version %q: want a semantic version such as 1.4.0", version))
	}
	key, err := upgrade.ReadPrivateKey(c.String("key"))
	if err != nil {
		return err
	}
	sha, _, err := upgrade.FileSHA256(c.Args().First())
	if err != nil {
		return err
	}
	_, err = a.env.Stdout.Write(upgrade.SignDetached(key, version, sha, c.Bool("allow-downgrade")).Marshal())
	return err
}
