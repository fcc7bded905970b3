package config

import (
	"errors"
	"strings"
	"testing"
)

// validInput is appended to cases that are not about the input section, so
// the line numbers in a case count from its own first line.
const validInput = "\ninput:\n  paths: [/var/log/a.log]\n"

// TestLoadRejects checks each bad input for the exact `agent.yaml:L:C: key`
// (or key-bearing message) it must produce.
func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // substring, starting at the file name
	}{
		// Layout, unknown keys (typo protection).
		{"unknown section", "inputz:\n  paths: [a]\n", "agent.yaml:1:1: inputz: unknown section; did you mean input?"},
		{"section without suggestion", "metrics: {}" + validInput, "agent.yaml:1:1: metrics: unknown section; the top level accepts: agent, input, inputs, queue, retry, output, log"},
		{"typo in queue", "queue:\n  poll-batch-sise: 3" + validInput, "agent.yaml:2:3: queue.poll-batch-sise: unknown key; did you mean queue.poll-batch-size?"},
		{"key in wrong section", "agent:\n  poll-batch-size: 3" + validInput, "agent.yaml:2:3: agent.poll-batch-size: unknown key; did you mean queue.poll-batch-size?"},
		{"section key at top level", "paths: [a]" + validInput, "agent.yaml:1:1: paths: unknown section; did you mean input.paths?"},
		{"typo in input", "input:\n  paths: [a]\n  read-from-begining: true\n", "agent.yaml:3:3: input.read-from-begining: unknown key; did you mean input.read-from-beginning?"},
		{"typo in input.multiline", "input:\n  paths: [a]\n  multiline:\n    max-line: 3\n", "agent.yaml:4:5: input.multiline.max-line: unknown key; did you mean input.multiline.max-lines?"},
		{"typo in input.file", "input:\n  file:\n    pathz: [a]\n", "agent.yaml:3:5: input.file.pathz: unknown key; did you mean input.file.paths?"},
		{"typo in output.tls", "output:\n  tls:\n    ca_file: x" + validInput, "agent.yaml:3:5: output.tls.ca_file: unknown key; did you mean output.tls.ca-file?"},
		{"typo in log", "log:\n  levl: debug" + validInput, "agent.yaml:2:3: log.levl: unknown key; did you mean log.level?"},
		{"type inside input.file", "input:\n  file:\n    type: file\n    paths: [a]\n", "agent.yaml:3:5: input.file.type: set the type as input.type"},
		{"merge key", "agent: &a {id: x}\nqueue:\n  <<: *a" + validInput, "agent.yaml:3:3: queue.<key>: merge keys (<<) are not supported"},

		// Wrong types.
		{"int from word", "agent:\n  idle-sleep-ms: fast" + validInput, `agent.yaml:2:3: agent.idle-sleep-ms: expected an integer, got "fast"`},
		{"int from float", "queue:\n  poll-batch-size: 1.5" + validInput, `agent.yaml:2:3: queue.poll-batch-size: expected an integer, got a number "1.5"`},
		{"int from list", "retry:\n  max-attempts: [1]" + validInput, "agent.yaml:2:3: retry.max-attempts: expected an integer, got a list"},
		{"int overflow", "agent:\n  bulk-max-size: \"99999999999999999999\"" + validInput, "agent.yaml:2:3: agent.bulk-max-size: \"99999999999999999999\" is out of range"},
		{"bool from word", "queue:\n  fsync: maybe" + validInput, `agent.yaml:2:3: queue.fsync: expected true or false, got "maybe"`},
		{"bool from int", "queue:\n  fsync: 1" + validInput, `agent.yaml:2:3: queue.fsync: expected true or false, got an integer "1"`},
		{"section is a scalar", "queue: 5" + validInput, `agent.yaml:1:1: queue: expected a mapping, got an integer "5"`},
		{"section is a list", "output:\n  - a" + validInput, "agent.yaml:1:1: output: expected a mapping, got a list"},
		{"input is a list", "input:\n  - a\n", "agent.yaml:1:1: input: expected a mapping, got a list"},
		{"paths is a mapping", "input:\n  paths: {a: 1}\n", "agent.yaml:2:3: input.paths: expected a list of strings, got a mapping"},
		{"paths element is a mapping", "input:\n  paths:\n    - a\n    - {b: 1}\n", "agent.yaml:4:7: input.paths[1]: expected a string, got a mapping"},
		{"string from list", "output:\n  endpoint: [a]" + validInput, "agent.yaml:2:3: output.endpoint: expected a string, got a list"},
		{"input.file is a scalar", "input:\n  paths: [a]\n  file: 5\n", `agent.yaml:3:3: input.file: expected a mapping, got an integer "5"`},
		{"top level is a scalar", "just text", `agent.yaml:1:1: expected a mapping of sections (agent, input, inputs, queue, retry, output, log, http, management), got "just text"`},

		// YAML itself.
		{"syntax error", "agent:\n  id: \"abc\n" + validInput, "agent.yaml:2:7: invalid YAML: could not find end character of double-quoted text"},
		{"duplicate key", "agent: {}\nagent: {}" + validInput, `agent.yaml:2:1: invalid YAML: mapping key "agent" already defined at [1:1]`},
		{"two documents", "agent: {}\n---\nqueue: {}" + validInput, "agent.yaml:3:6: the file holds more than one YAML document"},
		{"undefined alias", "agent:\n  id: *nope" + validInput, "agent.yaml:2:3: agent.id: alias *nope refers to no anchor &nope"},

		// Required sections, legacy layout.
		{"missing input", "agent: {}\n", "agent.yaml: input must be defined"},
		{"empty file", "", "agent.yaml: input must be defined"},
		{"comment only", "# nothing\n", "agent.yaml: input must be defined"},
		{"null input", "input:\nagent: {}\n", "agent.yaml:1:1: input must be defined"},
		{"legacy input.queue", "input:\n  paths: [a]\n  queue:\n    sqlite-path: x\n", "agent.yaml:3:3: input.queue is no longer supported: move these keys to the top-level queue section"},
		{"legacy input.file.queue", "input:\n  file:\n    paths: [a]\n    queue: {}\n", "agent.yaml:4:5: input.file.queue is no longer supported: move these keys to the top-level queue section"},
		{"unknown input type", "input:\n  type: kafka\n  paths: [a]\n", `agent.yaml:2:3: input.type: unknown input type "kafka" (known: file)`},
		{"sqlite-path and path", "queue:\n  path: a.db\n  sqlite-path: b.db" + validInput, "agent.yaml:3:3: queue.path and queue.sqlite-path are both set; keep only queue.path"},

		// Input values (checked by the connector, located by us).
		{"empty paths", "input:\n  paths: []\n", "agent.yaml:2:3: input.paths: must list at least one glob or directory"},
		{"missing paths", "input:\n  encoding: UTF-8\n", "agent.yaml:1:1: input.paths: must list at least one glob or directory"},
		{"blank path", "input:\n  paths:\n    - /a\n    - \"  \"\n", "agent.yaml:4:7: input.paths[1]: must not be blank"},
		{"bad on-error", "input:\n  paths: [a]\n  on-error: ignore\n", `agent.yaml:3:3: input.on-error: must be skip or fail, got "ignore"`},
		{"bad encoding", "input:\n  paths: [a]\n  encoding: NOT_A_REAL_CHARSET_XYZ\n", "agent.yaml:3:3: input.encoding: unsupported encoding"},
		{"multiline max-lines", "input:\n  paths: [a]\n  multiline:\n    max-lines: 0\n", "agent.yaml:4:5: input.multiline.max-lines: must be > 0, got 0"},
		{"nested multiline max-lines", "input:\n  paths: [a]\n  file:\n    multiline:\n      max-lines: -1\n", "agent.yaml:5:7: input.file.multiline.max-lines: must be > 0, got -1"},
		{"multiline flush timeout", "input:\n  paths: [a]\n  multiline:\n    pattern: '^\\d'\n    flush-idle-timeout-ms: 0\n", "agent.yaml:5:5: input.multiline.flush-idle-timeout-ms: must be > 0 when multiline is enabled, got 0"},
		{"output-format", "input:\n  paths: [a]\n  output-format:\n    type: xml\n", `agent.yaml:4:5: input.output-format.type: must be line or json, got "xml"`},

		// Agent, queue, retry ranges.
		{"delivery unknown", "agent:\n  delivery-guarantee: UNKNOWN_MODE" + validInput, `agent.yaml:2:3: Unsupported agent.delivery-guarantee "UNKNOWN_MODE"`},
		{"delivery exactly-once", "agent:\n  delivery-guarantee: exactly-once" + validInput, `agent.yaml:2:3: Unsupported agent.delivery-guarantee "exactly-once"`},
		{"delivery EXACTLY_ONCE", "agent:\n  delivery-guarantee: EXACTLY_ONCE" + validInput, `agent.yaml:2:3: Unsupported agent.delivery-guarantee "EXACTLY_ONCE"`},
		{"checkpoint to the console", "agent:\n  delivery-guarantee: CHECKPOINT\noutput:\n  type: console" + validInput,
			"agent.yaml:2:3: agent.delivery-guarantee: CHECKPOINT needs an output that can ask the engine about its checkpoints"},
		{"checkpoint to several endpoints", "agent:\n  delivery-guarantee: CHECKPOINT\noutput:\n  type: transport\n  token: t\n  endpoints: [\"127.0.0.1:1\", \"127.0.0.1:2\"]" + validInput,
			"agent.yaml:6:3: agent.delivery-guarantee CHECKPOINT delivers to one job: use output.endpoint, not output.endpoints"},
		{"idle-sleep-ms", "agent:\n  idle-sleep-ms: 0" + validInput, "agent.yaml:2:3: agent.idle-sleep-ms: must be > 0, got 0"},
		{"bulk-max-size", "agent:\n  bulk-max-size: 0" + validInput, "agent.yaml:2:3: agent.bulk-max-size: must be > 0, got 0"},
		{"flush-interval-ms", "agent:\n  flush-interval-ms: -1" + validInput, "agent.yaml:2:3: agent.flush-interval-ms: must be > 0, got -1"},
		{"shutdown-timeout-ms", "agent:\n  shutdown-timeout-ms: 0" + validInput, "agent.yaml:2:3: agent.shutdown-timeout-ms: must be > 0, got 0"},
		{"poll-batch-size", "queue:\n  poll-batch-size: 0" + validInput, "agent.yaml:2:3: queue.poll-batch-size: must be > 0, got 0"},
		{"cleanup-batch-size", "queue:\n  cleanup-batch-size: 0" + validInput, "agent.yaml:2:3: queue.cleanup-batch-size: must be > 0, got 0"},
		{"resurrect-batch-size", "queue:\n  resurrect-batch-size: 0" + validInput, "agent.yaml:2:3: queue.resurrect-batch-size: must be > 0, got 0"},
		{"resurrect-interval-ms", "queue:\n  resurrect-interval-ms: 0" + validInput, "agent.yaml:2:3: queue.resurrect-interval-ms: must be > 0, got 0"},
		{"acked-retention-ms", "queue:\n  acked-retention-ms: -5" + validInput, "agent.yaml:2:3: queue.acked-retention-ms: must be >= 0, got -5"},
		{"max-bytes", "queue:\n  max-bytes: -1" + validInput, "agent.yaml:2:3: queue.max-bytes: must be >= 0, got -1"},
		{"when-full", "queue:\n  when-full: drop-newest" + validInput, `agent.yaml:2:3: queue.when-full: must be block or drop-oldest, got "drop-newest"`},
		{"max-age-ms", "queue:\n  max-age-ms: -5" + validInput, "agent.yaml:2:3: queue.max-age-ms: must be >= 0, got -5"},
		{"empty queue.path", "queue:\n  path: ''" + validInput, "agent.yaml:2:3: queue.path: must not be empty"},
		{"drain", "queue:\n  drain: lifo" + validInput, `agent.yaml:2:3: queue.drain: must be oldest-first or newest-first, got "lifo"`},
		{"lane when", "queue:\n  lanes:\n    - name: alarm\n      when: 'level =='" + validInput, "queue.lanes[0].when: expression column"},
		{"newest-first with NON", "agent:\n  delivery-guarantee: NON\nqueue:\n  drain: newest-first" + validInput,
			"queue.drain: lanes and newest-first draining need a WAL to reorder: agent.delivery-guarantee NON keeps none"},
		{"max-attempts", "retry:\n  max-attempts: 0" + validInput, "agent.yaml:2:3: retry.max-attempts: must be > 0, got 0"},
		{"backoff-ms", "retry:\n  backoff-ms: 0" + validInput, "agent.yaml:2:3: retry.backoff-ms: must be > 0, got 0"},
		{"backoff-max below backoff", "retry:\n  backoff-ms: 500\n  backoff-max-ms: 100" + validInput, "agent.yaml:3:3: retry.backoff-max-ms (100) must be >= retry.backoff-ms (500)"},
		{"backoff-max below default backoff", "retry:\n  backoff-max-ms: 100" + validInput, "agent.yaml:2:3: retry.backoff-max-ms (100) must be >= retry.backoff-ms (250)"},

		// Output.
		{"output type", "output:\n  type: kafka" + validInput, `agent.yaml:2:3: output.type: unknown output type "kafka" (known: console, transport)`},
		{"transport without endpoint", "output:\n  type: transport\n  token: t" + validInput, "agent.yaml:1:1: output.endpoint: required: host:port of the engine's EdgeSocket source"},
		{"transport blank endpoint", "output:\n  type: transport\n  endpoint: '  '\n  token: t" + validInput, "agent.yaml:3:3: output.endpoint: required: host:port"},
		{"endpoint without port", "output:\n  type: transport\n  endpoint: localhost\n  token: t" + validInput, `agent.yaml:3:3: output.endpoint: expected host:port, got "localhost"`},
		{"endpoint port 0", "output:\n  type: transport\n  endpoint: localhost:0\n  token: t" + validInput, `agent.yaml:3:3: output.endpoint: invalid port in "localhost:0": must be 1..65535`},
		{"endpoint port too big", "output:\n  type: transport\n  endpoint: localhost:65536\n  token: t" + validInput, `agent.yaml:3:3: output.endpoint: invalid port in "localhost:65536"`},
		{"endpoint port word", "output:\n  type: transport\n  endpoint: host:http\n  token: t" + validInput, `agent.yaml:3:3: output.endpoint: invalid port in "host:http"`},
		{"endpoint without host", "output:\n  type: transport\n  endpoint: ':9999'\n  token: t" + validInput, `agent.yaml:3:3: output.endpoint: expected host:port, got ":9999"`},
		{"transport without token", "output:\n  type: transport\n  endpoint: h:1" + validInput, "agent.yaml:1:1: output.token: token is empty (it must equal the EdgeSocket source's token)"},
		{"transport blank token", "output:\n  type: transport\n  endpoint: h:1\n  token: '   '" + validInput, "agent.yaml:4:3: output.token: token is empty"},
		{"auth-type none", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  auth-type: none" + validInput, `agent.yaml:5:3: output.auth-type: must be "token" when set; "none" is not supported`},
		{"packet-mode", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: udp" + validInput, `agent.yaml:5:3: output.packet-mode: unknown packet mode "udp" (want raw or packet)`},
		{"compression-level in PACKET", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  compression-level: 12" + validInput, `agent.yaml:6:3: output.compression-level: compression level out of range: gzip takes 0 (store) to 9 (smallest), got 12`},
		{"compression in PACKET", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  compression: zstd" + validInput, `agent.yaml:6:3: output.compression: unknown compression "zstd" (want none, gzip, zlib or deflate)`},
		{"encryption in PACKET", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  encryption: rot13" + validInput, `agent.yaml:6:3: output.encryption: unknown encryption "rot13" (want none, aes_gcm or chacha20_poly1305)`},
		{"aes_gcm without key", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  encryption: aes_gcm" + validInput, `agent.yaml:1:1: output.aes-secret-key-base64: required when encryption is "aes_gcm"`},
		{"chacha without key", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: packet\n  encryption: CHACHA20_POLY1305" + validInput, `agent.yaml:1:1: output.aes-secret-key-base64: required when encryption is "chacha20_poly1305"`},
		{"short key", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  encryption: aes_gcm\n  aes-secret-key-base64: c2hvcnQ=" + validInput, "agent.yaml:7:3: output.aes-secret-key-base64: key must base64-decode to exactly 32 bytes (a 256-bit key; openssl rand -base64 32), got 5 bytes"},
		{"key not base64", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  encryption: aes_gcm\n  aes-secret-key-base64: '!!!'" + validInput, "agent.yaml:7:3: output.aes-secret-key-base64: key of 3 characters is not valid base64"},
		{"connect-timeout-ms", "output:\n  connect-timeout-ms: 0" + validInput, "agent.yaml:2:3: output.connect-timeout-ms: must be > 0, got 0"},
		{"read-timeout-ms", "output:\n  read-timeout-ms: -1" + validInput, "agent.yaml:2:3: output.read-timeout-ms: must be > 0, got -1"},
		{"max-batch-send-attempts", "output:\n  max-batch-send-attempts: 0" + validInput, "agent.yaml:2:3: output.max-batch-send-attempts: must be > 0, got 0"},
		{"max-reconnect-cycles", "output:\n  max-reconnect-cycles: 0" + validInput, "agent.yaml:2:3: output.max-reconnect-cycles: must be > 0, got 0"},
		{"max-backoff below initial", "output:\n  initial-backoff-ms: 500\n  max-backoff-ms: 100" + validInput, "agent.yaml:3:3: output.max-backoff-ms: must be >= initial-backoff-ms (500), got 100"},
		{"max-in-flight 0", "output:\n  max-in-flight: 0" + validInput, "agent.yaml:2:3: output.max-in-flight: must be between 1 and 65536, got 0"},
		{"max-in-flight 4097", "output:\n  max-in-flight: 65537" + validInput, "agent.yaml:2:3: output.max-in-flight: must be between 1 and 65536, got 65537"},
		{"tls cert without key", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  tls:\n    enabled: true\n    cert-file: /c.pem" + validInput, "agent.yaml:5:3: output.tls.key-file: required when cert-file is set"},

		// Log.
		{"log level", "log:\n  level: verbose" + validInput, `agent.yaml:2:3: log.level: must be debug, info, warn or error, got "verbose"`},
		{"log format", "log:\n  format: xml" + validInput, `agent.yaml:2:3: log.format: must be json or text, got "xml"`},
		{"log max-size-mb", "log:\n  max-size-mb: 0" + validInput, "agent.yaml:2:3: log.max-size-mb: must be > 0, got 0"},
		{"log max-backups", "log:\n  max-backups: -1" + validInput, "agent.yaml:2:3: log.max-backups: must be >= 0, got -1"},
		{"http on every interface without a token", "http:\n  listen: 0.0.0.0:9466" + validInput, `agent.yaml:2:3: http.listen: "0.0.0.0:9466" is reachable from other hosts: set http.token (a bearer token) or http.tls, or listen on 127.0.0.1`},
		{"http listen without a port", "http:\n  listen: localhost" + validInput, `agent.yaml:2:3: http.listen: must be host:port or "off", got "localhost"`},
		{"typo in http", "http:\n  lisen: off" + validInput, "agent.yaml:2:3: http.lisen: unknown key; did you mean http.listen?"},

		// Environment.
		{"unset variable", "output:\n  token: ${NOPE}" + validInput, "agent.yaml:2:3: output.token: environment variable NOPE is not set or empty (write ${NOPE:-default} to give a default)"},
		{"unset variable in list", "input:\n  paths:\n    - ${LOGS}/a.log\n", "agent.yaml:3:7: input.paths[0]: environment variable LOGS is not set"},
		{"unset variable in int", "agent:\n  idle-sleep-ms: ${IDLE}" + validInput, "agent.yaml:2:3: agent.idle-sleep-ms: environment variable IDLE is not set"},
		{"unterminated variable", "agent:\n  id: ${X" + validInput, "agent.yaml:2:3: agent.id: unterminated ${ in value"},
		{"bad variable name", "agent:\n  id: ${1X}" + validInput, "agent.yaml:2:3: agent.id: invalid environment variable name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := loadText(t, tc.yaml)
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want error containing %q", cfg, tc.want)
			}
			if cfg != nil {
				t.Errorf("Load returned a config together with an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestLoadAcceptsIgnoredValues: what the Java agent ignores must not fail.
func TestLoadAcceptsIgnoredValues(t *testing.T) {
	tests := []struct{ name, yaml string }{
		{"RAW ignores compression, encryption and key", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: raw\n  compression: zstd\n  encryption: rot13\n  aes-secret-key-base64: short" + validInput},
		{"console ignores endpoint and token", "output:\n  type: console\n  endpoint: nonsense\n  auth-type: none" + validInput},
		{"console ignores an unreadable token-file", "output:\n  token-file: /does/not/exist" + validInput},
		{"RAW and none ignore compression-level", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  compression-level: -3\n  encryption: aes_gcm" + validInput},
		{"empty compression means none", "output:\n  type: transport\n  endpoint: h:1\n  token: t\n  packet-mode: PACKET\n  compression: ''" + validInput},
		{"lanes and newest-first with CHECKPOINT", "agent:\n  delivery-guarantee: CHECKPOINT\noutput:\n  type: transport\n  endpoint: h:1\n  token: t\nqueue:\n  drain: newest-first\n  lanes:\n    - name: alarm\n      when: 'level == \"error\"'" + validInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := loadText(t, tc.yaml); err != nil {
				t.Fatalf("Load: %v", err)
			}
		})
	}
}

// TestLoadReportsEveryProblem: one run lists all problems, in file order.
func TestLoadReportsEveryProblem(t *testing.T) {
	_, _, err := loadText(t, `agent:
  idle-sleep-ms: 0
  bulk-max-size: x
queue:
  poll-batch-size: 0
  pol-batch-size: 1
retry:
  max-attempts: 0
input:
  paths: []
  multiline:
    max-lines: 0
output:
  type: transport
  endpoint: localhost
log:
  level: loud
`)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	want := []string{
		"agent.yaml:2:3: agent.idle-sleep-ms: must be > 0",
		"agent.yaml:3:3: agent.bulk-max-size: expected an integer",
		"agent.yaml:5:3: queue.poll-batch-size: must be > 0",
		"agent.yaml:6:3: queue.pol-batch-size: unknown key",
		"agent.yaml:8:3: retry.max-attempts: must be > 0",
		"agent.yaml:10:3: input.paths: must list at least one",
		"agent.yaml:12:5: input.multiline.max-lines: must be > 0",
		"agent.yaml:15:3: output.endpoint: expected host:port",
		"agent.yaml:13:1: output.token: token is empty",
		"agent.yaml:17:3: log.level: must be",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
	// File order: line numbers never go down.
	prev := 0
	for _, l := range lines {
		var line int
		if i := strings.Index(l, "agent.yaml:"); i >= 0 {
			rest := l[i+len("agent.yaml:"):]
			for _, r := range rest {
				if r < '0' || r > '9' {
					break
				}
				line = line*10 + int(r-'0')
			}
		}
		if line < prev {
			t.Errorf("problems not in file order:\n%v", err)
			break
		}
		prev = line
	}
}
