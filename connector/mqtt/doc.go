// Package mqtt is the `type: mqtt` input: an MQTT subscriber speaking
// 3.1.1 (eclipse/paho.mqtt.golang, client3.go) or 5 (eclipse/paho.golang,
// client5.go), chosen by protocol-version; the contract below holds for
// both, behind the brokerClient interface.
//
// Contract:
//
//   - A QoS 1 or 2 message is acknowledged (PUBACK, PUBREC) only once its
//     event is committed to the WAL: the client runs with automatic acks
//     off, and the input acks from input.Acker's Committed. A message the
//     agent took but did not store when it stopped or crashed is not
//     acknowledged, and the broker sends it again at the next session:
//     at least once, never lost, duplicates possible.
//   - The session is persistent by default (clean-session false, a fixed
//     client id; with MQTT 5 also a session expiry interval), so the broker keeps QoS 1/2 messages while the agent is
//     down. The input subscribes at every connect, so a broker restarted
//     without its session store gets the subscriptions back.
//   - Messages taken but not yet polled are bounded (max-pending-bytes).
//     At the bound the input stops taking messages: the client's reader
//     waits, nothing more is acknowledged, and the broker stops at its
//     in-flight window (QoS 1/2) or holds QoS 0 messages in its queue as
//     its own limits say. Nothing is dropped by the input.
//   - Each message is one event (see event.go for its fields).
//   - Input positions: none. The broker's session is the resume state.
package mqtt
