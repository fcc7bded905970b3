package mqtt

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEvent(t *testing.T) {
	recv := time.UnixMilli(1700000000123)
	for _, tc := range []struct {
		name, mode, field, topic string
		payload                  string
		want                     string
	}{
		{"text", PayloadText, "topic", "a/b", "21.5", `{"_ts":1700000000123,"topic":"a/b","qos":1,"retained":false,"message":"21.5"}`},
		{"no topic", PayloadText, "", "a/b", "x", `{"_ts":1700000000123,"qos":1,"retained":false,"message":"x"}`},
		{"renamed topic", PayloadText, "mqtt_topic", "a", "x", `{"_ts":1700000000123,"mqtt_topic":"a","qos":1,"retained":false,"message":"x"}`},
		{"json", PayloadJSON, "topic", "a", "{ \"v\" : [1, 2] }\n", `{"_ts":1700000000123,"topic":"a","qos":1,"retained":false,"payload":{"v":[1,2]}}`},
		{"json scalar", PayloadJSON, "topic", "a", "42", `{"_ts":1700000000123,"topic":"a","qos":1,"retained":false,"payload":42}`},
		{"not json", PayloadJSON, "topic", "a", "{oops", `{"_ts":1700000000123,"topic":"a","qos":1,"retained":false,"parse_error":"payload is not JSON","message":"{oops"}`},
		{"empty json", PayloadJSON, "topic", "a", "", `{"_ts":1700000000123,"topic":"a","qos":1,"retained":false,"parse_error":"payload is not JSON","message":""}`},
		{"invalid utf8", PayloadText, "topic", "a", "a\xffb", `{"_ts":1700000000123,"topic":"a","qos":1,"retained":false,"message":"a\ufffdb"}`},
		{"newline", PayloadText, "topic", "a", "l1\nl2", `{"_ts":1700000000123,"topic":"a","qos":1,"retained":false,"message":"l1\nl2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEncoder(tc.mode, tc.field)
			got := string(e.appendEvent(nil, tc.topic, 1, false, []byte(tc.payload), recv))
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// FuzzEvent: whatever the topic and payload, the event is one line of
// valid JSON; in text mode message is the payload (when it is UTF-8), in json mode either payload is the same JSON value or
// message is the payload with a parse_error.
func FuzzEvent(f *testing.F) {
	f.Add("a/b", []byte("21.5"), true)
	f.Add("", []byte(`{"a":[1,{"b":null}]}`), true)
	f.Add("t\x00", []byte("\xff\xfe"), false)
	f.Add("x", []byte(" \"s\\u2028\" "), true)
	f.Fuzz(func(t *testing.T, topic string, payload []byte, jsonMode bool) {
		mode := PayloadText
		if jsonMode {
			mode = PayloadJSON
		}
		ev := newEncoder(mode, "topic").appendEvent(nil, topic, 2, true, payload, time.UnixMilli(1))
		if bytes.ContainsAny(ev, "\n\r") {
			t.Fatalf("event holds a line break: %q", ev)
		}
		var got struct {
			Topic      string          `json:"topic"`
			Message    *string         `json:"message"`
			Payload    json.RawMessage `json:"payload"`
			ParseError string          `json:"parse_error"`
		}
		if err := json.Unmarshal(ev, &got); err != nil {
			t.Fatalf("not JSON: %v: %q", err, ev)
		}
		if utf8.ValidString(topic) && got.Topic != topic {
			t.Fatalf("topic %q, want %q", got.Topic, topic)
		}
		if got.Payload != nil {
			if !jsonMode {
				t.Fatal("payload in text mode")
			}
			var a, b any
			if json.Unmarshal(payload, &a) != nil || json.Unmarshal(got.Payload, &b) != nil {
				t.Fatalf("payload not the same JSON: %q -> %q", payload, got.Payload)
			}
			return
		}
		if got.Message == nil {
			t.Fatalf("neither payload nor message: %q", ev)
		}
		if jsonMode && got.ParseError == "" {
			t.Fatalf("json payload kept as text without parse_error: %q", ev)
		}
		if utf8.Valid(payload) && *got.Message != string(payload) {
			t.Fatalf("message %q, want %q", *got.Message, payload)
		}
	})
}
