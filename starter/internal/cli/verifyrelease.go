package cli

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// sumsFile is the checksum list a release ships beside its artifacts.
const sumsFile = "SHA256SUMS"

// maxSumsSize bounds the SHA256SUMS read: a release lists a few dozen
// files.
const maxSumsSize = 1 << 20

func (a *agentCLI) verifyReleaseCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "verify-release",
		Usage:     "check a downloaded release artifact's signature and SHA256SUMS entry",
		UsageText: "edge-agent verify-release (--public-key KEY | --public-key-file FILE) [--signature SIG] [--sums SHA256SUMS] ARTIFACT",
		Description: `Checks that ARTIFACT (a tarball, zip, .deb, .rpm or SBOM of a release) is
the file the release key signed: its SHA-256 is the one ARTIFACT.sig covers
and that signature verifies against the public key given. Take the public
key from a source other than the download (the project's site, a
configuration management secret); the .pub file shipped beside the
artifacts only says which key signed them.

When a SHA256SUMS file is beside ARTIFACT (or --sums names one), ARTIFACT
must be listed there with the same SHA-256, and the list's own signature,
SHA256SUMS.sig, must verify when it is there. Prints one line per check.

Exit codes: 0 every check passed, 1 a check failed (do not install the
file), 64 bad flags or arguments.

Examples:
   edge-agent verify-release --public-key-file edge-agent-release.pub edge-agent-0.2.0-linux-armv7.tar.gz
   edge-agent verify-release --public-key reBaRI9tsItElXURjSq6QdiylPeNHbKLyX+g/uZ7jME= edge-agent_0.2.0-1_arm64.deb`,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "public-key", Usage: "the release's public key (standard base64 of 32 bytes)"},
			&ucli.StringFlag{Name: "public-key-file", Usage: "file holding the release's public key", TakesFile: true},
			&ucli.StringFlag{Name: "signature", Usage: "detached signature (default ARTIFACT.sig)", TakesFile: true},
			&ucli.StringFlag{Name: "sums", Usage: "SHA256SUMS to check ARTIFACT against (default: the one beside ARTIFACT, when there)", TakesFile: true},
		},
		OnUsageError: usageError,
		Action:       a.verifyRelease,
	}
}

func (a *agentCLI) verifyRelease(c *ucli.Context) error {
	if c.NArg() != 1 {
		return withCode(exitcode.Usage, fmt.Errorf("verify-release takes one ARTIFACT, got %d arguments", c.NArg()))
	}
	pub, err := releasePublicKey(c.String("public-key"), c.String("public-key-file"))
	if err != nil {
		return err
	}
	artifact := c.Args().First()
	sigPath := c.String("signature")
	if sigPath == "" {
		sigPath = artifact + ".sig"
	}
	d, err := verifySigned(pub, artifact, sigPath)
	if err != nil {
		return err
	}
	out := a.env.Stdout
	fmt.Fprintf(out, "%s: signature %s verifies: version %s, sha256 %x\n", artifact, sigPath, d.Version, d.SHA256)

	sums, explicit := c.String("sums"), true
	if sums == "" {
		sums, explicit = filepath.Join(filepath.Dir(artifact), sumsFile), false
	}
	list, err := readBounded(sums, maxSumsSize)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		fmt.Fprintf(out, "%s: no %s beside it; not checked against one\n", artifact, sumsFile)
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify-release: %s: %w", sums, err)
	}
	want, found, err := sumsEntry(list, filepath.Base(artifact))
	if err != nil {
		return fmt.Errorf("verify-release: %s: %w", sums, err)
	}
	if !found {
		return fmt.Errorf("verify-release: %s does not list %s: it is not part of that release; do not install it", sums, filepath.Base(artifact))
	}
	if want != hex.EncodeToString(d.SHA256) {
		return fmt.Errorf("verify-release: %s lists %s with sha256 %s, but the file hashes to %x: do not install it", sums, filepath.Base(artifact), want, d.SHA256)
	}
	fmt.Fprintf(out, "%s: listed in %s with the same sha256\n", artifact, sums)
	if _, err := os.Stat(sums + ".sig"); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "%s: no %s.sig; the list's own signature not checked\n", sums, sums)
		return nil
	}
	sd, err := verifySigned(pub, sums, sums+".sig")
	if err != nil {
		return err
	}
	if sd.Version != d.Version {
		return fmt.Errorf("verify-release: %s is signed for version %s, %s for %s: they are not of one release", sums, sd.Version, artifact, d.Version)
	}
	fmt.Fprintf(out, "%s: signature %s.sig verifies\n", sums, sums)
	return nil
}

// releasePublicKey reads the key from exactly one of the two flags.
func releasePublicKey(value, file string) (ed25519.PublicKey, error) {
	switch {
	case value != "" && file != "":
		return nil, withCode(exitcode.Usage, errors.New("verify-release: give --public-key or --public-key-file, not both"))
	case value == "" && file == "":
		return nil, withCode(exitcode.Usage, errors.New("verify-release: --public-key or --public-key-file is required (the release's ed25519 public key)"))
	case file != "":
		raw, err := readBounded(file, 1<<10)
		if err != nil {
			return nil, fmt.Errorf("verify-release: --public-key-file %s: %w", file, err)
		}
		pub, err := upgrade.ParsePublicKey(string(raw))
		if err != nil {
			return nil, withCode(exitcode.Usage, fmt.Errorf("verify-release: --public-key-file %s: %w", file, err))
		}
		return pub, nil
	}
	pub, err := upgrade.ParsePublicKey(value)
	if err != nil {
		return nil, withCode(exitcode.Usage, fmt.Errorf("verify-release: --public-key: %w", err))
	}
	return pub, nil
}

// verifySigned hashes path and checks the detached signature in sigPath.
func verifySigned(pub ed25519.PublicKey, path, sigPath string) (upgrade.Detached, error) {
	raw, err := readBounded(sigPath, upgrade.MaxDetachedSize)
	if err != nil {
		return upgrade.Detached{}, fmt.Errorf("verify-release: signature of %s: %w", path, err)
	}
	d, err := upgrade.ParseDetached(raw)
	if err != nil {
		return upgrade.Detached{}, fmt.Errorf("verify-release: %s: %w", sigPath, err)
	}
	sha, _, err := upgrade.FileSHA256(path)
	if err != nil {
		return upgrade.Detached{}, fmt.Errorf("verify-release: %w", err)
	}
	if err := upgrade.VerifyDetached(pub, d, sha); err != nil {
		return upgrade.Detached{}, fmt.Errorf("verify-release: %s refused: %w; do not install it", path, err)
	}
	return d, nil
}

// readBounded reads a file of at most limit bytes; a larger one is an
// error, not a truncated read.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", path, limit)
	}
	return b, nil
}

// sumsEntry finds name in a SHA256SUMS list ("<64 hex>  <name>" per line,
// as sha256sum writes it, "*" before binary-mode names) and returns its
// lowercase hex sum. A malformed line is an error naming its number; a
// name listed twice is an error too, whatever the sums.
func sumsEntry(list []byte, name string) (sum string, found bool, err error) {
	for i, line := range strings.Split(strings.TrimSuffix(string(list), "\n"), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		hexSum, file, ok := strings.Cut(line, " ")
		if !ok || len(hexSum) != 64 || len(file) < 2 || (file[0] != ' ' && file[0] != '*') {
			return "", false, fmt.Errorf("line %d is not \"<sha256>  <file>\"", i+1)
		}
		if _, err := hex.DecodeString(hexSum); err != nil {
			return "", false, fmt.Errorf("line %d: the sum is not hex", i+1)
		}
		if file[1:] != name {
			continue
		}
		if found {
			return "", false, fmt.Errorf("line %d lists %s a second time", i+1, name)
		}
		sum, found = strings.ToLower(hexSum), true
	}
	return sum, found, nil
}
