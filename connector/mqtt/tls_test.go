package mqtt

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edge-agent/edge-agent/connector/internal/testpki"
	"github.com/edge-agent/edge-agent/connector/mqtt/mosquittotest"
)

// A broker requiring TLS, a client certificate and a password: the input
// connects over mqtts:// with all three and receives; without the client
// certificate, or with a wrong password, it never subscribes.
func TestTLSClientCertAndPassword(t *testing.T) {
	for _, v := range []string{Protocol311, Protocol5} {
		t.Run("mqtt"+v, func(t *testing.T) { testTLSClientCertAndPassword(t, v) })
	}
}

func testTLSClientCertAndPassword(t *testing.T, version string) {
	bin := mosquittotest.Path(t)
	passwd := filepath.Join(filepath.Dir(bin), "..", "bin", "mosquitto_passwd")
	if p, err := exec.LookPath("mosquitto_passwd"); err == nil {
		passwd = p
	}
	dir := t.TempDir()
	pk := testpki.Write(t, dir)
	pwFile := filepath.Join(dir, "passwd")
	if out, err := exec.Command(passwd, "-c", "-b", pwFile, "gw7", "s3cret-pass").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v: %s", err, out)
	}
	b := mosquittotest.Start(t, mosquittotest.Options{NoAnonymous: true, Extra: "" +
		"cafile " + pk.CA + "\n" +
		"certfile " + pk.ServerCert + "\n" +
		"keyfile " + pk.ServerKey + "\n" +
		"require_certificate true\n" +
		"password_file " + pwFile + "\n"})
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("s3cret-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := func() *Config {
		c := brokerConfig(b, "secure/#")
		c.Brokers = []string{b.URL("mqtts")}
		c.ProtocolVersion = version
		c.Username, c.PasswordFile = "gw7", filepath.Join(dir, "pw")
		c.TLS = TLSConfig{CAFile: pk.CA, CertFile: pk.ClientCert, KeyFile: pk.ClientKey}
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
