package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/logging"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport/codec"
)

const minimal = "input:\n  paths: [/var/log/a.log]\n"

func mustLoad(t *testing.T, text string) (*Config, []Warning) {
	t.Helper()
	cfg, warns, err := loadText(t, text)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg, warns
}

func fileInput(t *testing.T, cfg *Config) *file.Config {
	t.Helper()
	if len(cfg.Inputs) != 1 || cfg.Inputs[0].Key != "input" || !cfg.Inputs[0].OptionalID {
		t.Fatalf("inputs %+v, want the one input: section", cfg.Inputs)
	}
	fc, ok := cfg.Inputs[0].Config.(*file.Config)
	if !ok {
		t.Fatalf("input is %T, want *file.Config", cfg.Inputs[0].Config)
	}
	return fc
}

// TestDefaults pins checklist §1.3 and §1.5 and our additions.
func TestDefaults(t *testing.T) {
	want := NewDefaultConfig()
	out := output.NewTransportConfig()
	checks := []struct {
		key       string
		got, want any
	}{
		{"agent.delivery-guarantee", want.Agent.Delivery, agent.DeliveryBestEffort},
		{"agent.idle-sleep-ms", want.Agent.IdleSleep, 200 * time.Millisecond},
		{"agent.bulk-max-size", want.Agent.BulkMaxSize, 256},
		{"agent.flush-interval-ms", want.Agent.FlushInterval, time.Second},
		{"agent.shutdown-timeout-ms", want.Agent.ShutdownTimeout, 10 * time.Second},
		{"queue.path", want.Queue.Path, "data/wal.db"},
		{"queue.poll-batch-size", want.Queue.PollBatchSize, 128},
		{"queue.cleanup-batch-size", want.Queue.CleanupBatchSize, 128},
		{"queue.acked-retention-ms", want.Queue.AckedRetention, time.Duration(0)},
		{"queue.resurrect-batch-size", want.Queue.ResurrectBatchSize, 100},
		{"queue.resurrect-interval-ms", want.Queue.ResurrectInterval, time.Minute},
		// Half on 32-bit builds, where bbolt's map is capped.
		{"queue.max-bytes", want.Queue.MaxBytes, map[int]int64{32: 512 << 20, 64: 1 << 30}[strconv.IntSize]},
		{"queue.fsync", want.Queue.Fsync, true},
		{"queue.fsync-share", want.Queue.FsyncShare, 0.25},
		{"queue.group-max-bytes", want.Queue.GroupMaxBytes, 4 << 20},
		{"queue.slow-disk-group-max-bytes", want.Queue.SlowDiskGroupMaxBytes, 8 << 20},
		{"retry.max-attempts", want.Retry.MaxAttempts, 16},
		{"retry.backoff-ms", want.Retry.Backoff, 250 * time.Millisecond},
		{"retry.backoff-max-ms", want.Retry.BackoffMax, 5 * time.Minute},
		{"output.type", want.Output.Type, "console"},
		// The output's own defaults: the client's and the codec's.
		{"output.auth-type", out.AuthType, "token"},
		{"output.connect-timeout-ms", out.Client.ConnectTimeout, 5 * time.Second},
		{"output.read-timeout-ms", out.Client.ReadTimeout, 30 * time.Second},
		{"output.max-batch-send-attempts", out.Client.MaxBatchSendAttempts, 64},
		{"output.initial-backoff-ms", out.Client.InitialBackoff, 100 * time.Millisecond},
		{"output.max-backoff-ms", out.Client.MaxBackoff, 30 * time.Second},
		{"output.max-reconnect-cycles", out.Client.MaxReconnectCycles, 16},
		{"output.max-in-flight", out.Client.MaxInFlight, 32768},
		{"output.packet-mode", out.PacketMode.Value, codec.ModeRaw},
		{"output.compression", out.Compression.Value, codec.CompressionGzip},
		{"output.compression-level", out.CompressionLevel, codec.DefaultLevel},
		{"output.encryption", out.Encryption.Value, codec.EncryptionNone},
		{"log.level", want.Log.Level, logging.Level(slog.LevelInfo)},
		{"log.format", want.Log.Format, logging.FormatJSON},
		{"log.file", want.Log.File, "log/edge-agent.log"},
		{"log.max-size-mb", want.Log.MaxSizeMB, 100},
		{"log.max-backups", want.Log.MaxBackups, 5},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.key, c.got, c.want)
		}
	}

	// A file with only input.paths yields exactly the defaults.
	cfg, warns := mustLoad(t, minimal)
	want.Output.Options = output.NewConsoleConfig()
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if !reflect.DeepEqual(cfg.Agent, want.Agent) || !reflect.DeepEqual(cfg.Queue, want.Queue) ||
		!reflect.DeepEqual(cfg.Retry, want.Retry) || !reflect.DeepEqual(cfg.Output, want.Output) ||
		!reflect.DeepEqual(cfg.Log, want.Log) {
		t.Errorf("minimal file does not give the defaults:\n%+v\nwant\n%+v", cfg, want)
	}
	// §1.4: input defaults come from the connector.
	fc := fileInput(t, cfg)
	if fc.Encoding != "UTF-8" || fc.GlobScanInterval != 5*time.Second || fc.OnError != "skip" ||
		fc.ReadFromBeginning || fc.CloseInactive != 5*time.Minute || fc.Multiline.Match != "after" ||
		fc.Multiline.Negate || fc.Multiline.MaxLines != 500 || fc.Multiline.FlushIdleTimeout != 5*time.Second ||
		fc.OutputFormat.Type != "line" {
		t.Errorf("file input defaults: %+v", fc)
	}
}

func TestDefaultConfigNeedsInput(t *testing.T) {
	err := NewDefaultConfig().Validate()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "input must be defined") {
		t.Fatalf("Validate() = %v", err)
	}
}

// TestJavaParity walks checklist §1.1, §1.2 and §1.5.
func TestJavaParity(t *testing.T) {
	t.Run("omitted types resolve to file and console", func(t *testing.T) {
		cfg, _ := mustLoad(t, minimal)
		if cfg.Inputs[0].Type != "file" || cfg.Output.Type != output.TypeConsole {
			t.Errorf("types: input %q, output %q", cfg.Inputs[0].Type, cfg.Output.Type)
		}
		if _, ok := cfg.Output.Options.(*output.ConsoleConfig); !ok {
			t.Errorf("output options are %T", cfg.Output.Options)
		}
	})
	t.Run("explicit types are lower-cased", func(t *testing.T) {
		cfg, _ := mustLoad(t, "input:\n  type: FILE\n  paths: [a]\noutput:\n  type: TRANSPORT\n  endpoint: h:1\n  token: t\n")
		if cfg.Inputs[0].Type != "file" || cfg.Output.Type != output.TypeTransport {
			t.Errorf("types: input %q, output %q", cfg.Inputs[0].Type, cfg.Output.Type)
		}
		transportOf(t, cfg)
	})
	t.Run("delivery guarantee default", func(t *testing.T) {
		for _, text := range []string{minimal, "agent:\n  id: a1\n" + minimal, "agent: {}\n" + minimal} {
			cfg, _ := mustLoad(t, text)
			if cfg.Agent.Delivery != agent.DeliveryBestEffort {
				t.Errorf("%q: %v", text, cfg.Agent.Delivery)
			}
		}
	})
	t.Run("delivery guarantee aliases", func(t *testing.T) {
		for in, want := range map[string]agent.Delivery{
			"best-effort": agent.DeliveryBestEffort, "best_effort": agent.DeliveryBestEffort, "BEST_EFFORT": agent.DeliveryBestEffort,
			"NON": agent.DeliveryNon, "non": agent.DeliveryNon, "NONE": agent.DeliveryNon, "none": agent.DeliveryNon,
		} {
			cfg, warns := mustLoad(t, "agent:\n  delivery-guarantee: "+in+"\n"+minimal)
			if cfg.Agent.Delivery != want {
				t.Errorf("%s -> %s, want %s", in, cfg.Agent.Delivery, want)
			}
			if want == agent.DeliveryNon && len(warns) != 1 {
				t.Errorf("NON: want one warning, got %v", warns)
			}
		}
	})
	t.Run("queue defaults when omitted or empty", func(t *testing.T) {
		for _, text := range []string{minimal, "queue: {}\n" + minimal, "queue:\n" + minimal, "retry: {}\n" + minimal} {
			cfg, _ := mustLoad(t, text)
			if !reflect.DeepEqual(cfg.Queue, NewDefaultConfig().Queue) || cfg.Retry != NewDefaultConfig().Retry {
				t.Errorf("%q: queue %+v retry %+v", text, cfg.Queue, cfg.Retry)
			}
		}
	})
	t.Run("slices are carried through", func(t *testing.T) {
		cfg, warns := mustLoad(t, `agent:
  id: agent-1
  bulk-max-size: 7
queue:
  sqlite-path: /var/lib/edge/wal.db
input:
  id: input-1
  paths: [/a]
output:
  id: out-1
  type: transport
  endpoint: collector.example.com:9876
  token: secret
`)
		if cfg.Agent.ID != "agent-1" || cfg.Agent.BulkMaxSize != 7 || cfg.Queue.Path != "/var/lib/edge/wal.db" ||
			transportOf(t, cfg).Client.Endpoint != "collector.example.com:9876" || cfg.Output.ID != "out-1" ||
			cfg.PinnedInputID() != "input-1" {
			t.Errorf("not carried: %+v", cfg)
		}
		if len(warns) != 1 || !strings.Contains(warns[0].String(), "agent.yaml:5:3: queue.sqlite-path is deprecated: rename it to queue.path") {
			t.Errorf("warnings = %v", warns)
		}
	})
	t.Run("nested input.file wins over flat keys", func(t *testing.T) {
		cfg, _ := mustLoad(t, `input:
  paths: [/flat]
  encoding: UTF-8
  read-from-beginning: false
  multiline:
    pattern: '^flat'
    max-lines: 10
  file:
    paths: [/nested/a, /nested/b]
    read-from-beginning: true
    multiline:
      max-lines: 20
`)
		fc := fileInput(t, cfg)
		if !reflect.DeepEqual(fc.Paths, []string{"/nested/a", "/nested/b"}) || !fc.ReadFromBeginning ||
			fc.Multiline.MaxLines != 20 || fc.Multiline.Pattern != "^flat" || fc.Encoding != "UTF-8" {
			t.Errorf("merged input: %+v", fc)
		}
	})
	t.Run("nested input.file alone", func(t *testing.T) {
		cfg, _ := mustLoad(t, "input:\n  type: file\n  file:\n    id: in-7\n    paths: [/x]\n")
		if fc := fileInput(t, cfg); cfg.PinnedInputID() != "in-7" || len(fc.Paths) != 1 {
			t.Errorf("nested only: id %q, %+v", cfg.PinnedInputID(), fc)
		}
	})
	t.Run("nested input.file.id wins over input.id", func(t *testing.T) {
		cfg, _ := mustLoad(t, "input:\n  id: flat\n  type: file\n  file:\n    id: nested\n    paths: [/x]\n")
		if cfg.PinnedInputID() != "nested" {
			t.Errorf("input id %q, want nested", cfg.PinnedInputID())
		}
	})
	t.Run("console needs no endpoint or token", func(t *testing.T) {
		mustLoad(t, "output:\n  type: console\n"+minimal)
	})
	t.Run("endpoint and token are trimmed", func(t *testing.T) {
		// The client trims them where it uses them; the check agrees.
		mustLoad(t, "output:\n  type: transport\n  endpoint: '  collector.example.com:9876 '\n  token: '  tok  '\n"+minimal)
	})
	t.Run("IPv6 endpoint", func(t *testing.T) {
		mustLoad(t, "output:\n  type: transport\n  endpoint: '[::1]:9999'\n  token: t\n"+minimal)
	})
	t.Run("enums are normalised", func(t *testing.T) {
		cfg, _ := mustLoad(t, `output:
  type: transport
  endpoint: h:1
  token: t
  auth-type: TOKEN
  packet-mode: packet
  compression: ZLIB
  encryption: AES_GCM
  aes-secret-key-base64: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=
log:
  level: WARNING
  format: logfmt
`+minimal)
		o := transportOf(t, cfg)
		if o.PacketMode.Value != codec.ModePacket || o.Compression.Value != codec.CompressionZlib ||
			o.Encryption.Value != codec.EncryptionAESGCM || cfg.Log.Level != logging.Level(slog.LevelWarn) || cfg.Log.Format != logging.FormatText {
			t.Errorf("not normalised: %+v %+v", o, cfg.Log)
		}
	})
	t.Run("unpadded base64 key", func(t *testing.T) {
		mustLoad(t, "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  encryption: chacha20_poly1305\n  aes-secret-key-base64: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n"+minimal)
	})
	t.Run("YAML 1.1 booleans", func(t *testing.T) {
		cfg, _ := mustLoad(t, "queue:\n  fsync: off\ninput:\n  paths: [a]\n  read-from-beginning: yes\n")
		if cfg.Queue.Fsync || !fileInput(t, cfg).ReadFromBeginning {
			t.Errorf("fsync %v read-from-beginning %v", cfg.Queue.Fsync, fileInput(t, cfg).ReadFromBeginning)
		}
	})
	t.Run("quoted numbers, hex, anchors and a scalar path", func(t *testing.T) {
		cfg, _ := mustLoad(t, "agent:\n  bulk-max-size: '512'\n  idle-sleep-ms: 0x10\nretry:\n  backoff-ms: &b 400\n  backoff-max-ms: *b\ninput:\n  paths: /var/log/one.log\n")
		if cfg.Agent.BulkMaxSize != 512 || cfg.Agent.IdleSleep != 16*time.Millisecond || cfg.Retry.BackoffMax != 400*time.Millisecond ||
			!reflect.DeepEqual(fileInput(t, cfg).Paths, []string{"/var/log/one.log"}) {
			t.Errorf("got %+v %+v %v", cfg.Agent, cfg.Retry, fileInput(t, cfg).Paths)
		}
	})
	t.Run("null values keep defaults", func(t *testing.T) {
		cfg, _ := mustLoad(t, "agent:\n  idle-sleep-ms:\n  bulk-max-size: ~\n"+minimal)
		if cfg.Agent.IdleSleep != 200*time.Millisecond || cfg.Agent.BulkMaxSize != 256 {
			t.Errorf("got %+v", cfg.Agent)
		}
	})
}

func TestPathAndHash(t *testing.T) {
	text := minimal + "# comment\n"
	p := writeConfig(t, text)
	cfg, _, err := Load(p, LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(text))
	if cfg.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("Hash = %s", cfg.Hash)
	}
	if cfg.Path != p || !filepath.IsAbs(cfg.Path) {
		t.Errorf("Path = %s, want %s", cfg.Path, p)
	}

	// A relative path is made absolute.
	dir := filepath.Dir(p)
	t.Chdir(dir)
	cfg, _, err = Load("agent.yaml", LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), Getenv: env{}.get})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != filepath.Join(dir, "agent.yaml") {
		t.Errorf("Path = %s", cfg.Path)
	}
}

func TestLoadReadErrors(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), LoadOptions{Registry: testRegistry(), Outputs: testOutputs()})
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Load(writeConfig(t, minimal), LoadOptions{}); err == nil {
		t.Error("nil registry accepted")
	}
	if _, _, err := Load(writeConfig(t, minimal), LoadOptions{Registry: testRegistry()}); err == nil {
		t.Error("nil output registry accepted")
	}
}

func TestReadFileOption(t *testing.T) {
	calls := 0
	read := func(p string) ([]byte, error) {
		calls++
		if p != "virtual.yaml" {
			return nil, os.ErrNotExist
		}
		return []byte(minimal), nil
	}
	if _, _, err := Load("virtual.yaml", LoadOptions{Registry: testRegistry(), Outputs: testOutputs(), ReadFile: read}); err != nil || calls != 1 {
		t.Fatalf("Load = %v after %d reads", err, calls)
	}
}

func TestValidateWithoutFile(t *testing.T) {
	cfg := NewDefaultConfig()
	fc := file.NewDefaultConfig()
	fc.Paths = []string{"/a"}
	cfg.Inputs = []InputEntry{{Key: "input", OptionalID: true, Type: file.TypeName, Config: fc}}
	cfg.Output.Options = output.NewConsoleConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cfg.Queue.PollBatchSize = 0
	fc.Multiline.MaxLines = 0
	err := cfg.Validate()
	want := "input.multiline.max-lines: must be > 0, got 0\nqueue.poll-batch-size: must be > 0, got 0"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() =\n%v\nwant\n%s", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.File != "" || fe.Line != 0 {
		t.Errorf("FieldError = %+v", fe)
	}
}

// TestHTTPListenOff: "off" (a YAML 1.1 boolean) reads as the word, which
// disables the server.
func TestHTTPListenOff(t *testing.T) {
	for _, v := range []string{"off", "OFF", `"off"`} {
		cfg, _ := mustLoad(t, "http:\n  listen: "+v+"\n"+minimal)
		if cfg.HTTP.Enabled() {
			t.Errorf("listen: %s: server still enabled (%q)", v, cfg.HTTP.Listen)
		}
	}
	if cfg, _ := mustLoad(t, minimal); cfg.HTTP.Listen != "127.0.0.1:9466" || !cfg.HTTP.Enabled() {
		t.Errorf("default http.listen %q", cfg.HTTP.Listen)
	}
}
