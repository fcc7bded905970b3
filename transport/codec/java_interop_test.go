package codec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The SeaTunnel engine is Java: this program decodes packets with the same
// JDK classes it uses (java.util.zip, javax.crypto AES/GCM/NoPadding with
// a 128-bit tag) and encodes them the way the Java agent does.
const javaInterop = `
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.SecureRandom;
import java.util.*;
import java.util.regex.*;
import java.util.zip.*;
import javax.crypto.Cipher;
import javax.crypto.spec.*;

public class EdgeInterop {
  static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":(null|\"([^\"]*)\"|(\\d+))").matcher(json);
    if (!m.find()) return null;
    return m.group(2) != null ? m.group(2) : m.group(3);
  }
  static byte[] decompress(String c, byte[] b) throws IOException {
    switch (c.toLowerCase()) {
      case "none": return b;
      case "gzip": return new GZIPInputStream(new ByteArrayInputStream(b)).readAllBytes();
      case "zlib": return new InflaterInputStream(new ByteArrayInputStream(b), new Inflater()).readAllBytes();
      case "deflate": return new InflaterInputStream(new ByteArrayInputStream(b), new Inflater(true)).readAllBytes();
    }
    throw new IOException("unknown compression " + c);
  }
  static byte[] compress(String c, byte[] b) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    switch (c) {
      case "none": return b;
      case "gzip": try (GZIPOutputStream z = new GZIPOutputStream(out)) { z.write(b); } break;
      case "zlib": try (DeflaterOutputStream z = new DeflaterOutputStream(out, new Deflater(Deflater.DEFAULT_COMPRESSION, false))) { z.write(b); } break;
      case "deflate": try (DeflaterOutputStream z = new DeflaterOutputStream(out, new Deflater(Deflater.DEFAULT_COMPRESSION, true))) { z.write(b); } break;
      default: throw new IOException("unknown compression " + c);
    }
    return out.toByteArray();
  }
  public static void main(String[] args) throws Exception {
    Base64.Decoder d64 = Base64.getDecoder();
    Base64.Encoder e64 = Base64.getEncoder();
    SecretKeySpec key = new SecretKeySpec(d64.decode(args[1]), "AES");
    SecureRandom rnd = new SecureRandom();
    PrintStream out = new PrintStream(new FileOutputStream(args[3]), true, "UTF-8");
    for (String line : Files.readAllLines(Paths.get(args[2]), StandardCharsets.UTF_8)) {
      if (line.isEmpty()) continue;
      if (args[0].equals("decode")) {
        byte[] body = d64.decode(field(line, "payload"));
        String enc = field(line, "encryption");
        if (enc != null && enc.equalsIgnoreCase("aes_gcm")) {
          Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
          c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(128, d64.decode(field(line, "iv"))));
          body = c.doFinal(body);
        }
        out.println(e64.encodeToString(decompress(field(line, "compression"), body)));
      } else {
        String[] p = line.split(" ", 3);
        byte[] body = compress(p[0], d64.decode(p[2]));
        String iv = "null";
        if (p[1].equals("aes_gcm")) {
          byte[] ivb = new byte[12];
          rnd.nextBytes(ivb);
          Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
          c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, ivb));
          body = c.doFinal(body);
          iv = "\"" + e64.encodeToString(ivb) + "\"";
        }
        out.println("{\"version\":1,\"payload\":\"" + e64.encodeToString(body) + "\",\"compression\":\"" + p[0]
            + "\",\"encryption\":\"" + p[1] + "\",\"iv\":" + iv + "}");
      }
    }
  }
}
`

// javaCase is one (options, event) pair checked in both directions.
type javaCase struct {
	o     Options
	event []byte
}

func javaCases() []javaCase {
	events := [][]byte{
		[]byte(`{"_index":0,"_file":"/var/log/app.log","_line":7,"_offset":512,"_ts":1700000000000,"payload":"GET /x 200 — ünïcødé ✓"}`),
		[]byte(""),
		bytes.Repeat([]byte(`{"k":"repeated text compresses well"}`), 3000),
		// Level 1's fixed-Huffman path: matches, and input it stores.
		event(fixedMaxInput),
		noise(fixedMaxInput, 3),
	}
	var cases []javaCase
	for c := CompressionNone; c <= CompressionDeflate; c++ {
		// The engine must read stored streams, the fastest level (our
		// default), the Java agent's own (6) and the smallest.
		levels := []int{0}
		if _, _, ok := c.Levels(); ok {
			levels = []int{0, 1, 6, 9}
		}
		for _, l := range levels {
			for _, e := range []Encryption{EncryptionNone, EncryptionAESGCM} {
				for _, ev := range events {
					o := Options{Mode: ModePacket, Compression: c, Level: l, Encryption: e}
					if e != EncryptionNone {
						o.Key = testKey
					}
					cases = append(cases, javaCase{o, ev})
				}
			}
		}
	}
	return cases
}

func TestJavaInterop(t *testing.T) {
	javac, errC := exec.LookPath("javac")
	java, errJ := exec.LookPath("java")
	if errC != nil || errJ != nil {
		t.Skip("skipping the JVM interop test: java and javac must both be on PATH (install a JDK, e.g. openjdk-17-jdk-headless)")
	}
	if testing.Short() {
		t.Skip("skipping the JVM interop test in -short mode")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "EdgeInterop.java")
	if err := os.WriteFile(src, []byte(javaInterop), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, javac, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	keyB64 := base64.StdEncoding.EncodeToString(testKey)
	runJava := func(mode string, input []string) []string {
		t.Helper()
		in := filepath.Join(dir, mode+".in")
		outPath := filepath.Join(dir, mode+".out")
		if err := os.WriteFile(in, []byte(strings.Join(input, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, java, "-cp", dir, "EdgeInterop", mode, keyB64, in, outPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("java %s: %v\n%s", mode, err, out)
		}
		f, err := os.Open(outPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return lines
	}
	cases := javaCases()

	t.Run("java decodes what Go encodes", func(t *testing.T) {
		var in []string
		for _, c := range cases {
			w, err := mustEncoder(t, c.o).Encode(nil, c.event)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, string(w))
		}
		out := runJava("decode", in)
		if len(out) != len(cases) {
			t.Fatalf("java printed %d lines for %d packets", len(out), len(cases))
		}
		for i, c := range cases {
			got, _ := base64.StdEncoding.DecodeString(out[i])
			if !bytes.Equal(got, c.event) {
				t.Errorf("%s, %d-byte event: java decoded %d different bytes", name(c.o), len(c.event), len(got))
			}
		}
	})

	t.Run("Go decodes what java encodes", func(t *testing.T) {
		var in []string
		for _, c := range cases {
			in = append(in, fmt.Sprintf("%s %s %s", c.o.Compression, c.o.Encryption, base64.StdEncoding.EncodeToString(c.event)))
		}
		out := runJava("encode", in)
		if len(out) != len(cases) {
			t.Fatalf("java printed %d lines for %d events", len(out), len(cases))
		}
		d := mustDecoder(t, ModePacket, testKey)
		for i, c := range cases {
			got, err := d.Decode([]byte(out[i]))
			if err != nil || !bytes.Equal(got, c.event) {
				t.Errorf("%s, %d-byte event: %v", name(c.o), len(c.event), err)
			}
			if c.o.Compression == CompressionNone && c.o.Encryption == EncryptionNone {
				// Deterministic case: our envelope must be byte-identical.
				ours, _ := mustEncoder(t, c.o).Encode(nil, c.event)
				if string(ours) != out[i] {
					t.Errorf("envelope differs from Java's:\n ours %.120s\n java %.120s", ours, out[i])
				}
			}
		}
	})
}
