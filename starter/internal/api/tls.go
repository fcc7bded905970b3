package api

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/edge-agent/edge-agent/transport/tlsfiles"
)

// TLSSettings are http.tls.*: the server's certificate and key. With
// them the API speaks HTTPS, which is the other way (beside http.token) to
// open it beyond loopback.
type TLSSettings struct {
	// CertFile is the PEM certificate (chain) the server presents.
	CertFile string `yaml:"cert-file"`
	// KeyFile is its PEM private key.
	KeyFile string `yaml:"key-file"`
}

// Enabled reports whether the API serves HTTPS.
func (t TLSSettings) Enabled() bool { return strings.TrimSpace(t.CertFile) != "" }

// AnchorPaths makes relative certificate paths relative to the install
// root, like every other path agent.yaml names.
func (t *TLSSettings) AnchorPaths(resolve func(string) string) {
	t.CertFile, t.KeyFile = resolve(strings.TrimSpace(t.CertFile)), resolve(strings.TrimSpace(t.KeyFile))
}

// serverConfig loads the pair for the listener; errors name the keys.
// The files are read again when they change (tlsfiles): a rotated
// certificate is served from the next handshake on.
func (t TLSSettings) serverConfig() (*tls.Config, error) {
	pair, err := tlsfiles.Load(t.CertFile, t.KeyFile, tlsfiles.Options{})
	if err != nil {
		return nil, fmt.Errorf("http.tls.cert-file %q / http.tls.key-file %q: %w", t.CertFile, t.KeyFile, err)
	}
	return &tls.Config{GetCertificate: pair.GetCertificate, MinVersion: tls.VersionTLS12}, nil
}

// errNotOurCertificate is what a client pinned to the configured
// certificate says of any other.
var errNotOurCertificate = errors.New("the server's certificate is not http.tls.cert-file's")

// clientConfig is what `status` and `db` use to reach the agent on this
// host: they dial loopback, where the certificate's names rarely apply,
// so instead of names and a CA they trust exactly the certificate the
// agent was configured with (pinned by its bytes).
func (t TLSSettings) clientConfig() (*tls.Config, error) {
	pemBytes, err := os.ReadFile(t.CertFile)
	if err != nil {
		return nil, fmt.Errorf("http.tls.cert-file: %w", err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("http.tls.cert-file %q: no PEM certificate", t.CertFile)
	}
	leaf := block.Bytes
	if _, err := x509.ParseCertificate(leaf); err != nil {
		return nil, fmt.Errorf("http.tls.cert-file %q: %w", t.CertFile, err)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Names are not checked (loopback); the pin below is the check.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], leaf) {
				return errNotOurCertificate
			}
			return nil
		},
	}, nil
}
