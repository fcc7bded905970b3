// Package tlsfiles keeps a certificate and its key read from PEM files
// and reads them again when either file changes, so that a rotated
// certificate is used from the next TLS handshake on, without a restart.
//
// Contract:
//   - The files are checked at a handshake, at most every CheckEvery
//     (default DefaultCheckEvery): a stat of each, compared by identity,
//     size and modification time.
//   - A changed pair is used once both files parse and match; until then
//     (a rotation half written: the certificate new, the key not yet) the
//     pair in use is kept and the problem is returned by Err.
package tlsfiles

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// DefaultCheckEvery bounds how often the files are looked at: a busy
// listener handshakes far more often than certificates rotate.
const DefaultCheckEvery = time.Second

// Options tune a KeyPair; the zero value is the default.
type Options struct {
	// CheckEvery is the least time between two looks at the files; 0
	// takes DefaultCheckEvery, a negative value looks at every handshake.
	CheckEvery time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// KeyPair is a certificate and key kept from their files. Safe for
// concurrent use.
type KeyPair struct {
	certFile, keyFile string
	o                 Options

	mu       sync.Mutex
	pair     *tls.Certificate
	certInfo os.FileInfo
	keyInfo  os.FileInfo
	checked  time.Time
	err      error // the last reload's failure; nil once one succeeds
}

// Load reads the pair; its error names the files.
func Load(certFile, keyFile string, o Options) (*KeyPair, error) {
	if o.CheckEvery == 0 {
		o.CheckEvery = DefaultCheckEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	k := &KeyPair{certFile: certFile, keyFile: keyFile, o: o}
	ci, ki, pair, err := k.read()
	if err != nil {
		return nil, err
	}
	k.pair, k.certInfo, k.keyInfo, k.checked = pair, ci, ki, o.Now()
	return k, nil
}

func (k *KeyPair) read() (os.FileInfo, os.FileInfo, *tls.Certificate, error) {
	ci, err := os.Stat(k.certFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("certificate %s: %w", k.certFile, err)
	}
	ki, err := os.Stat(k.keyFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("key %s: %w", k.keyFile, err)
	}
	pair, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("certificate %s and key %s: %w", k.certFile, k.keyFile, err)
	}
	return ci, ki, &pair, nil
}

func same(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// Current returns the pair to present, read again first if the files
// changed (and it is time to look).
func (k *KeyPair) Current() *tls.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.o.Now()
	if k.o.CheckEvery > 0 && now.Sub(k.checked) < k.o.CheckEvery {
		return k.pair
	}
	k.checked = now
	ci, cerr := os.Stat(k.certFile)
	ki, kerr := os.Stat(k.keyFile)
	if cerr == nil && kerr == nil && same(ci, k.certInfo) && same(ki, k.keyInfo) {
		return k.pair
	}
	ci, ki, pair, err := k.read()
	if err != nil {
		k.err = err
		return k.pair
	}
	k.pair, k.certInfo, k.keyInfo, k.err = pair, ci, ki, nil
	return k.pair
}

// Err is why the changed files were not taken (nil: the pair in use is
// the files').
func (k *KeyPair) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// GetCertificate is for tls.Config.GetCertificate (a server).
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}

// GetClientCertificate is for tls.Config.GetClientCertificate (a client).
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}
