package account

import (
	"encoding/json"
)

// Record is a gap record: rows of one input given up undelivered, for one
// reason. Its JSON (Marshal) is a contract, members in this order, those
// marked omitempty left out when zero:
//
//	{"_gap":true,"_input":"app","_host":"edge-7","_agent_id":"…","reason":"dropped: queue full",
//	 "count":120,"first_seq":1001,"last_seq":1120,"first_ts":1700000000000,"last_ts":1700000059000,
//	 "file":"/var/log/app.log","batch_ids":[[5001,5120]],"_ts":1700000100000}
//
// or, for bytes an input never read:
//
//	{"_gap":true,"_input":"app","_host":"edge-7","_agent_id":"…","reason":"gone-unread",
//	 "count":0,"file":"/var/log/app.log.1","offsets":[4096,9000],"bytes":4904,"_ts":1700000100000}
type Record struct {
	Gap     bool   `json:"_gap"`
	Input   string `json:"_input"`
	Host    string `json:"_host"`
	AgentID string `json:"_agent_id"`
	// Reason is why the rows were given up ("dropped: queue full",
	// "dropped: max-age", "dead: <why>", "purged", "lost: salvage"), or
	// why bytes were never read ("deleted-unread", "gone-unread").
	Reason string `json:"reason"`
	// Count is how many rows; with a sequence range it is
	// LastSeq-FirstSeq+1.
	Count int64 `json:"count"`
	// FirstSeq..LastSeq is the "_seq" range of the rows, both 0 (left
	// out) when their sequence numbers are unknown (a damaged block, rows
	// stored before agent.account was on): such a record counts rows but
	// covers no range.
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	// FirstTS and LastTS are the oldest and newest event time ("_ts",
	// unix ms) of the rows, left out when they had none.
	FirstTS int64 `json:"first_ts,omitempty"`
	LastTS  int64 `json:"last_ts,omitempty"`
	// File is the "_file" the rows came from, when they did.
	File string `json:"file,omitempty"`
	// Offsets and Bytes are set for bytes an input never read (a file
	// rotated away or deleted before it was read to its end):
	// the byte offsets [from, to) of the file and their length. Those
	// bytes were never rows: Count is 0 and the record covers no range.
	Offsets *[2]int64 `json:"offsets,omitempty"`
	Bytes   int64     `json:"bytes,omitempty"`
	// BatchIDs are the wire batch ids of the rows given up, as [first,
	// last] runs, in CHECKPOINT delivery only: each of them is also sent
	// as a stand-in so that the job's watermark passes it.
	BatchIDs [][2]int64 `json:"batch_ids,omitempty"`
	// TS is when the record was made (unix ms).
	TS int64 `json:"_ts"`
}

// Marshal returns the record's JSON, one line.
func (r Record) Marshal() []byte {
	r.Gap = true
	b, _ := json.Marshal(r) // strings, numbers and arrays: cannot fail
	return b
}

// Covers reports whether the record names a sequence range.
func (r Record) Covers() bool { return r.FirstSeq > 0 && r.LastSeq >= r.FirstSeq }
