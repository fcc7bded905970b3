// Package config loads, checks and describes agent.yaml.
//
// Contract:
//   - NewDefaultConfig holds every default (the Java agent's, plus ours);
//     Load overlays one YAML file on top of it, so an existing Java
//     agent.yaml loads unchanged.
//   - Load works on the YAML AST, not on a plain struct decode, so every
//     problem names the key as written and the line:column where it
//     appears. Unknown keys, wrong types and out-of-range values are all
//     reported at once (errors.Join); each wraps ErrInvalid.
//   - `${VAR}` and `${VAR:-default}` are expanded inside scalar values
//     (never in keys) before they are decoded; `$${` writes a literal `${`.
//   - Secrets (output.token, output.aes-secret-key-base64, http.token, the
//     management.opamp.headers values, and the files they may come from)
//     never appear in errors, warnings, Redacted or RedactYAML.
//   - The management section is management.Settings; LoadRemote checks a
//     config from the OpAMP server as Load checks a file and keeps the
//     local management section and queue.path.
//   - The `input` section belongs to the input type named by input.type; it
//     is decoded into the config its connector factory provides, so this
//     package knows no input keys of its own.
//   - Likewise the `output` section belongs to the output type named by
//     output.type (package output's registry): its keys, defaults and
//     checks are the transport client's and the codec's own.
//
// Messages read `<file>:<line>:<col>: <key>: <problem>`, for example
//
//	agent.yaml:12:3: queue.poll-batch-size: must be > 0, got 0
//
// The key is the full key as written (inside the nested block:
// input.file.paths[0]); a key missing from the file is located at its
// nearest enclosing section, or has no line at all; a message that already
// names its key ("retry.backoff-max-ms (100) must be >= ...") does not
// repeat it.
//
// Nothing here keeps package-level state; a Config is a plain value that is
// safe to read from several goroutines once Load has returned it.
package config
