// Package opamptask is the wire form of the agent's operator tasks: OpAMP
// custom messages of one custom capability. The server sends a Request
// (type TaskMessage); the agent answers each with one Result (type
// ResultMessage) and, for a task with an attachment such as the
// diagnostics bundle, Chunks first, in order. Data are JSON. The agent
// (package management) and the stand-in server (package opampdev) share
// it.
package opamptask

import "encoding/json"

// Capability and message types.
const (
	Capability = "io.edge-agent.tasks"
	// TaskMessage is a Request, server to agent.
	TaskMessage = "task"
	// ResultMessage is a Result, agent to server.
	ResultMessage = "result"
	// ChunkMessage is a Chunk of a task's attachment, agent to server,
	// sent before its ResultMessage.
	ChunkMessage = "chunk"
)

// ChunkBytes is the attachment bytes per ChunkMessage; MaxAttachment
// bounds an attachment (a bigger one is refused, not cut).
const (
	ChunkBytes    = 256 << 10
	MaxAttachment = 16 * ChunkBytes
)

// Request is what the server asks: ID is the server's, echoed in the
// result; Args are the task's own (none of the current tasks take any).
type Request struct {
	ID   string          `json:"id"`
	Task string          `json:"task"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Result is the answer: OK, or Error saying what went wrong; Details are
// the task's figures. Chunks and Bytes describe the attachment sent
// before this result (0 when none).
type Result struct {
	ID      string          `json:"id"`
	Task    string          `json:"task"`
	OK      bool            `json:"ok"`
	Error   string          `json:"error,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	Chunks  int             `json:"chunks,omitempty"`
	Bytes   int             `json:"bytes,omitempty"`
}

// Chunk is part Seq (from 0) of Of of a task's attachment.
type Chunk struct {
	ID   string `json:"id"`
	Seq  int    `json:"seq"`
	Of   int    `json:"of"`
	Data []byte `json:"data"`
}
