// Package console is a transport.Sender that writes each payload as one log
// record instead of sending it: the Java agent's `output.type: console`,
// for trying a configuration without an engine. Every batch is Received.
package console
