package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// packageFlags are the --package* flags: a binary offered as the agent's
// next version.
type packageFlags struct {
	file, version, key string
	allowDowngrade     bool
	cutAfter           int64
}

func (p *packageFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.file, "package", "", "binary to offer as the agent's new version")
	fs.StringVar(&p.version, "package-version", "", "the version --package is")
	fs.StringVar(&p.key, "package-key", "", "private key file to sign --package with (edge-agent package keygen)")
	fs.BoolVar(&p.allowDowngrade, "package-allow-downgrade", false, "sign --package as a permitted downgrade")
	fs.Int64Var(&p.cutAfter, "package-cut-after", 0, "cut the first download after so many bytes")
}

// offer signs and offers the package, when --package is set.
func (p *packageFlags) offer(srv *opampdev.Server, stdout io.Writer) error {
	if p.file == "" {
		if p.version != "" || p.key != "" {
			return errors.New("--package-version and --package-key need --package FILE")
		}
		return nil
	}
	if !upgrade.ValidVersion(p.version) || p.key == "" {
		return fmt.Errorf("--package needs --package-version (a semantic version such as 1.4.0, got %q) and --package-key", p.version)
	}
	content, err := os.ReadFile(p.file)
	if err != nil {
		return fmt.Errorf("--package: %w", err)
	}
	key, err := upgrade.ReadPrivateKey(p.key)
	if err != nil {
		return fmt.Errorf("--package-key: %w", err)
	}
	sha, _, err := upgrade.FileSHA256(p.file)
	if err != nil {
		return err
	}
	if p.cutAfter > 0 {
		srv.CutNextDownload(p.cutAfter)
	}
	url, err := srv.OfferPackage(opampdev.Package{Version: p.version, Content: content,
		Signature: upgrade.Sign(key, p.version, sha, p.allowDowngrade)})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "offering %s as version %s (sha256 %x, %d bytes) from %s\n", p.file, p.version, sha[:6], len(content), url)
	return nil
}

// writePackage adds the agent's package status to the listing.
func writePackage(b *strings.Builder, a opampdev.Agent) {
	status, has, offered, msg := a.PackageStatus()
	if status == "" {
		return
	}
	fmt.Fprintf(b, "    package: %s (has %s, offered %s)", status, has, offered)
	if msg != "" {
		fmt.Fprintf(b, ": %s", msg)
	}
	b.WriteString("\n")
}
