// Package identity keeps the agent's ids in the id file (edge-agent.id),
// in the Java agent's format, byte for byte:
//
//	agent.id=<v>
//	input.id=<v>
//	output.id=<v>
//
// Resolve merges the ids pinned in agent.yaml (or, for the input id, the one
// the WAL already knows) with the file, generates the missing ones as
// random UUIDv4 and writes the file back atomically (temp file, fsync,
// rename, fsync of the directory), so a crash never leaves a torn id file
// and two starts give the same ids.
//
// The WAL stores the input id too, and the scheduler prefers it: deleting
// the id file therefore never orphans saved positions (a Java weakness).
package identity
