package mqtt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/mqtt/mosquittotest"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir, as PEM files named <name>.crt / <name>.key.
func pki(t *testing.T, dir string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	write := func(name string, der []byte, key *ecdsa.PrivateKey) {
		if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		if key != nil {
			kb, _ := x509.MarshalECPrivateKey(key)
			if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("ca", caDER, nil)
	for i, name := range []string{"server", "client"} {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		write(name, der, key)
	}
}

// A broker requiring TLS, a client certificate and a password: the input
// connects over mqtts:// with all three and receives; without the client
// certificate, or with a wrong password, it never subscribes.
func TestTLSClientCertAndPassword(t *testing.T) {
	bin := mosquittotest.Path(t)
	passwd := filepath.Join(filepath.Dir(bin), "..", "bin", "mosquitto_passwd")
	if p, err := exec.LookPath("mosquitto_passwd"); err == nil {
		passwd = p
	}
	dir := t.TempDir()
	pki(t, dir)
	pwFile := filepath.Join(dir, "passwd")
	if out, err := exec.Command(passwd, "-c", "-b", pwFile, "gw7", "s3cret-pass").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v: %s", err, out)
	}
	b := mosquittotest.Start(t, mosquittotest.Options{NoAnonymous: true, Extra: "" +
		"cafile " + filepath.Join(dir, "ca.crt") + "\n" +
		"certfile " + filepath.Join(dir, "server.crt") + "\n" +
		"keyfile " + filepath.Join(dir, "server.key") + "\n" +
		"require_certificate true\n" +
		"password_file " + pwFile + "\n"})
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("s3cret-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := func() *Config {
		c := brokerConfig(b, "secure/#")
		c.Brokers = []string{b.URL("mqtts")}
		c.Username, c.PasswordFile = "gw7", filepath.Join(dir, "pw")
		c.TLS = TLSConfig{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}
		return c
	}

	noCert := cfg()
	noCert.ClientID, noCert.TLS.CertFile, noCert.TLS.KeyFile = "no-cert", "", ""
	inNoCert := open(t, noCert, "bus")
	badPw := cfg()
	badPw.ClientID, badPw.PasswordFile, badPw.Password = "bad-pw", "", "wrong"
	inBadPw := open(t, badPw, "bus")

	in := open(t, cfg(), "bus")
	waitSubscribed(t, in, 1)
	tc, err := cfg().tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	pub := publisher(t, b.URL("mqtts"), func(o *pahoOptions) {
		o.SetTLSConfig(tc).SetUsername("gw7").SetPassword("s3cret-pass")
	})
	publish(t, pub, "secure/a", 1, "over tls")
	checkEvents(t, "over TLS", pollN(t, in, 1, true), []string{"secure/a=over tls"})
	waitFor(t, "refused connections counted", func() bool {
		return inNoCert.Stats().Errors > 0 && inBadPw.Stats().Errors > 0
	})
	for name, in := range map[string]*Input{"no client certificate": inNoCert, "wrong password": inBadPw} {
		if s := in.Stats(); s.ConnectionsTotal != 0 || s.LinesRead != 0 {
			t.Errorf("%s: connected anyway: %+v", name, s)
		}
	}
}
