// Package enginemodel is an executable model of the Apache SeaTunnel
// EdgeSocket source as the engine runs it: the reader state that gives
// batch ids their RECEIVED, PENDING, ACK, RETRY and RESEND answers, the
// bounded record queue with its QUEUE_FULL high-water mark, the line
// protocol of one collector session, a simulated job around the source
// (a drain-limited sink into two-phase committed output, checkpoints,
// failover to the last completed checkpoint, a fresh restart) and a TCP
// server that, like the engine, serves one collector at a time and stops
// listening while it does.
//
// The model reproduces the engine's replies, quirks included: the floor
// quirk (before any checkpoint, receiving id N makes every id below N
// answer ACK:N-1), no deduplication, and a watermark that advances only
// over consecutive fully drained ids. Tests against it stand in for
// tests against the real engine.
//
// A Source's downstream is either a job polling its queue (Job, Poll)
// or a Sink taking each record as it is accepted: the latter is how the
// test stand-in (transport/transporttest/standin) runs on this model.
//
// Time never flows by itself here except in Job.Run: tests drive it
// with Job.Advance, Job.Drain and Job.Checkpoint.
package enginemodel
