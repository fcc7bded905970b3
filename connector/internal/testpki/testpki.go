// Package testpki names the files of transport/transporttest's PKI (a
// throw-away CA, a server certificate for 127.0.0.1 and a client
// certificate) as the mqtt input's TLS test reads them. Test support
// only; new tests use transporttest.NewPKI.
package testpki

import (
	"testing"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// Files are the PEM files of a PKI.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// Write makes the CA and both certificates. They go into a temporary
// folder of t's; dir is kept for the callers that name it.
func Write(t testing.TB, _ string) Files {
	t.Helper()
	p := transporttest.NewPKI(t)
	return Files{CA: p.CAFile, ServerCert: p.Server.CertFile, ServerKey: p.Server.KeyFile,
		ClientCert: p.Client.CertFile, ClientKey: p.Client.KeyFile}
}
