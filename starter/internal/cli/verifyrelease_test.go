package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// release lays out what make dist ships, made with the CLI's own keygen
// and sign: two artifacts, each with its .sig, SHA256SUMS listing both
// and SHA256SUMS.sig. It returns the folder and the public key.
func release(t *testing.T, e *testEnv, version string) (dir, pub string) {
	t.Helper()
	dir = filepath.Join(e.home, "release")
	key := filepath.Join(e.home, "release.key")
	if _, err := os.Stat(key); err != nil {
		if code := e.run("package", "keygen", "--out", key); code != 0 {
			t.Fatalf("keygen: exit %d: %s", code, e.stderr.String())
		}
	}
	if code := e.run("package", "pubkey", "--key", key); code != 0 {
		t.Fatalf("pubkey: exit %d: %s", code, e.stderr.String())
	}
	pub = strings.TrimSpace(e.stdout.String())
	sign := func(path string) {
		if code := e.run("package", "sign", "--key", key, "--version", version, path); code != 0 {
			t.Fatalf("sign %s: exit %d: %s", path, code, e.stderr.String())
		}
		if err := os.WriteFile(path+".sig", e.stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sums strings.Builder
	for _, name := range []string{"edge-agent-" + version + "-linux-armv7.tar.gz", "edge-agent_" + version + "-1_armhf.deb"} {
		content := "the bytes of " + name
		path := e.write(filepath.Join("release", name), content)
		sign(path)
		h := sha256.Sum256([]byte(content))
		fmt.Fprintf(&sums, "%x  %s\n", h, name)
	}
	sign(e.write("release/SHA256SUMS", sums.String()))
	return dir, pub
}

// A release as built verifies; every way of tampering with an artifact,
// its signature or the list is refused with exit 1 and a message naming
// the file and what is wrong; bad arguments are usage errors.
func TestVerifyRelease(t *testing.T) {
	const tgz = "edge-agent-0.2.0-linux-armv7.tar.gz"
	type change func(t *testing.T, e *testEnv, dir string) (args []string, pub string)
	none := func(*testing.T, *testEnv, string) ([]string, string) { return nil, "" }
	for _, tc := range []struct {
		name    string
		change  change
		code    int
		stdout  []string
		stderrs []string
	}{
		{name: "as built", change: none,
			stdout: []string{tgz + ": signature", "verifies: version 0.2.0", "listed in", "SHA256SUMS.sig verifies"}},
		{name: "artifact changed", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				appendTo(t, filepath.Join(dir, tgz), "x")
				return nil, ""
			},
			stderrs: []string{tgz + " refused", "SHA-256 is not the one its signature covers", "do not install it"}},
		{name: "signed by another key", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				k := filepath.Join(e.home, "other.key")
				if code := e.run("package", "keygen", "--out", k); code != 0 {
					t.Fatal(e.stderr.String())
				}
				e.run("package", "pubkey", "--key", k)
				return nil, strings.TrimSpace(e.stdout.String())
			},
			stderrs: []string{tgz + " refused", "does not verify against the public key given"}},
		{name: "signed version altered", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				replaceIn(t, filepath.Join(dir, tgz+".sig"), "version: 0.2.0", "version: 0.3.0")
				return nil, ""
			},
			stderrs: []string{tgz + " refused", "does not verify"}},
		{name: "signature file garbled", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				writeFile(t, filepath.Join(dir, tgz+".sig"), "hello\n")
				return nil, ""
			},
			stderrs: []string{tgz + ".sig", "not a detached signature", "line 1"}},
		{name: "no signature", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				removeFile(t, filepath.Join(dir, tgz+".sig"))
				return nil, ""
			},
			stderrs: []string{"signature of", tgz}},
		{name: "listed with another sum", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				// Another signed release's list: the artifact's own signature holds.
				sum := sha256.Sum256([]byte("another file"))
				writeFile(t, filepath.Join(dir, "SHA256SUMS"), hex.EncodeToString(sum[:])+"  "+tgz+"\n")
				return nil, ""
			},
			stderrs: []string{"SHA256SUMS lists " + tgz + " with sha256 " + hex.EncodeToString(sha(t, "another file")), "do not install it"}},
		{name: "not listed", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				replaceIn(t, filepath.Join(dir, "SHA256SUMS"), tgz, "edge-agent-0.2.0-linux-386.tar.gz")
				return nil, ""
			},
			stderrs: []string{"does not list " + tgz}},
		{name: "list changed after signing", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				appendTo(t, filepath.Join(dir, "SHA256SUMS"), hex.EncodeToString(sha(t, "x"))+"  extra.tar.gz\n")
				return nil, ""
			},
			stderrs: []string{"SHA256SUMS refused", "SHA-256 is not the one"}},
		{name: "no list beside it", change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
			removeFile(t, filepath.Join(dir, "SHA256SUMS"))
			return nil, ""
		},
			stdout: []string{"verifies: version 0.2.0", "no SHA256SUMS beside it; not checked"}},
		{name: "list named but missing", code: exitcode.Failure,
			change: func(t *testing.T, e *testEnv, dir string) ([]string, string) {
				return []string{"--sums", filepath.Join(dir, "nope")}, ""
			},
			stderrs: []string{"nope"}},
		{name: "no key", code: exitcode.Usage,
			change:  func(t *testing.T, e *testEnv, dir string) ([]string, string) { return nil, "-" },
			stderrs: []string{"--public-key or --public-key-file is required"}},
		{name: "key not a key", code: exitcode.Usage,
			change:  func(t *testing.T, e *testEnv, dir string) ([]string, string) { return nil, "aGVsbG8=" },
			stderrs: []string{"--public-key", "5 bytes, want 32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			dir, pub := release(t, e, "0.2.0")
			args, other := tc.change(t, e, dir)
			switch other {
			case "":
			case "-":
				pub = ""
			default:
				pub = other
			}
			cmd := []string{"verify-release"}
			if pub != "" {
				cmd = append(cmd, "--public-key", pub)
			}
			code := e.run(append(append(cmd, args...), filepath.Join(dir, tgz))...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, e.stdout.String(), e.stderr.String())
			}
			for _, want := range tc.stdout {
				if !strings.Contains(e.stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, e.stdout.String())
				}
			}
			for _, want := range tc.stderrs {
				if !strings.Contains(e.stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, e.stderr.String())
				}
			}
		})
	}
}

// The key file form reads what the release ships as its .pub (the
// output of package pubkey).
func TestVerifyReleaseKeyFile(t *testing.T) {
	e := newTestEnv(t)
	dir, pub := release(t, e, "0.2.0")
	keyFile := e.write("edge-agent-release.pub", pub+"\n")
	if code := e.run("verify-release", "--public-key-file", keyFile, filepath.Join(dir, "edge-agent_0.2.0-1_armhf.deb")); code != 0 {
		t.Fatalf("exit %d: %s", code, e.stderr.String())
	}
	if code := e.run("verify-release", "--public-key-file", keyFile, "--public-key", pub, filepath.Join(dir, "edge-agent_0.2.0-1_armhf.deb")); code != exitcode.Usage {
		t.Fatalf("both key flags: exit %d, want %d", code, exitcode.Usage)
	}
}

// sumsEntry reads what sha256sum writes, text and binary mode, and
// refuses what it cannot read or a name listed twice.
func TestSumsEntry(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("CD", 32)
	for _, tc := range []struct {
		list, name, sum string
		found, bad      bool
	}{
		{list: a + "  x.tar.gz\n" + b + " *y.deb\n", name: "y.deb", sum: strings.ToLower(b), found: true},
		{list: a + "  x.tar.gz\r\n", name: "x.tar.gz", sum: a, found: true},
		{list: a + "  x.tar.gz\n", name: "x.tar"},
		{list: "", name: "x"},
		{list: a + " x.tar.gz\n", name: "x.tar.gz", bad: true},
		{list: a[:62] + "  x\n", name: "x", bad: true},
		{list: strings.Repeat("zz", 32) + "  x\n", name: "x", bad: true},
		{list: a + "  x\n" + b + "  x\n", name: "x", bad: true},
	} {
		sum, found, err := sumsEntry([]byte(tc.list), tc.name)
		if (err != nil) != tc.bad || sum != tc.sum || found != tc.found {
			t.Errorf("sumsEntry(%q, %q) = %q, %t, %v; want %q, %t, error %t", tc.list, tc.name, sum, found, err, tc.sum, tc.found, tc.bad)
		}
	}
}

func FuzzSumsEntry(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 32)+"  x.tar.gz\n"), "x.tar.gz")
	f.Add([]byte("garbage"), "x")
	f.Fuzz(func(t *testing.T, list []byte, name string) {
		sum, found, err := sumsEntry(list, name)
		if err != nil && (found || sum != "") {
			t.Fatalf("error %v with a result %q", err, sum)
		}
		if found && (len(sum) != 64 || sum != strings.ToLower(sum)) {
			t.Fatalf("found sum %q is not 64 lowercase hex digits", sum)
		}
		if err != nil && strings.Contains(err.Error(), string(list)) && len(list) > 8 {
			t.Fatalf("error quotes the list: %v", err)
		}
	})
}

func sha(t *testing.T, s string) []byte {
	t.Helper()
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, more string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b)+more)
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	writeFile(t, path, strings.Replace(string(b), old, new, 1))
}

func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
