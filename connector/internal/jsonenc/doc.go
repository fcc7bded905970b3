// Package jsonenc appends JSON string literals and integers to byte slices
// without reflection, for the event JSON the inputs build on their hot
// paths (file, journald, syslog).
//
// Contract: the output of AppendString is always a valid JSON string that
// decodes back to the input text, except that every invalid UTF-8 sequence
// in the input becomes U+FFFD (and is counted), so a payload never breaks
// the one-line, valid-UTF-8 wire format even when a source sends binary data.
// Control characters are escaped, so the output never holds a raw newline.
//
// The escaper looks at 8 bytes at a time in Go and, on amd64, at 16 with
// SSE2 (scan_amd64.s) over runs with nothing to escape; its output must
// stay byte for byte that of the plain escaper kept in legacy_test.go,
// which the differential tests and fuzz test check.
package jsonenc
