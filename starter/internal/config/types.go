package config

import (
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Config is agent.yaml after defaults, overlay, aliases and validation.
// Durations keep the Java agent's "-ms" integer keys.
type Config struct {
	Agent  AgentConfig  `yaml:"agent"`
	Queue  QueueConfig  `yaml:"queue"`
	Retry  RetryConfig  `yaml:"retry"`
	Output OutputConfig `yaml:"output"`
	Log    LogConfig    `yaml:"log"`

	// InputType is input.type, lower-cased ("file").
	InputType string `yaml:"-"`
	// Input is the decoded config of InputType's factory
	// (for "file": *file.Config from the connector module).
	Input input.Config `yaml:"-"`

	// Path is the absolute path of the file this was loaded from.
	Path string `yaml:"-"`
	// Hash is a hex SHA-256 of the file's bytes (for status output).
	Hash string `yaml:"-"`

	// InputID is input.id as written ("" = resolve it through the
	// identity file). SetIDs fills it and the input config's id.
	InputID string `yaml:"-"`

	// where locates keys in the file for Validate's messages; nil for a
	// Config built in code.
	where *sourceMap
}

// Delivery guarantees (agent.delivery-guarantee).
const (
	DeliveryBestEffort = "BEST_EFFORT"
	DeliveryNon        = "NON"
)

type AgentConfig struct {
	ID                string `yaml:"id"`
	DeliveryGuarantee string `yaml:"delivery-guarantee"`  // normalised: BEST_EFFORT | NON
	IdleSleepMs       int64  `yaml:"idle-sleep-ms"`       // 200, > 0
	BulkMaxSize       int    `yaml:"bulk-max-size"`       // 256, > 0
	FlushIntervalMs   int64  `yaml:"flush-interval-ms"`   // 1000, > 0
	ShutdownTimeoutMs int64  `yaml:"shutdown-timeout-ms"` // 10000, > 0: bound on graceful stop
}

type QueueConfig struct {
	// The WAL's own options: path (alias: sqlite-path, deprecated) and
	// fsync, with their defaults and checks in package wal.
	wal.Options `yaml:",inline"`

	PollBatchSize       int   `yaml:"poll-batch-size"`       // 128
	CleanupBatchSize    int   `yaml:"cleanup-batch-size"`    // 128
	AckedRetentionMs    int64 `yaml:"acked-retention-ms"`    // 0 = delete at ack
	ResurrectBatchSize  int   `yaml:"resurrect-batch-size"`  // 100
	ResurrectIntervalMs int64 `yaml:"resurrect-interval-ms"` // 60000, > 0
	MaxBytes            int64 `yaml:"max-bytes"`             // 1 GiB; 0 = unlimited; backpressure limit
}

type RetryConfig struct {
	MaxAttempts  int   `yaml:"max-attempts"`   // 16
	BackoffMs    int64 `yaml:"backoff-ms"`     // 250
	BackoffMaxMs int64 `yaml:"backoff-max-ms"` // 300000, >= backoff-ms
}

// OutputConfig is the output section. output.type and output.id are the
// registry's; every other key is decoded into the type's own config.
type OutputConfig struct {
	// ID is output.id as written ("" = resolve it through the identity
	// file); SetIDs records the resolved one.
	ID string `yaml:"id"`
	// Type is output.type, lower-cased ("console", "transport").
	Type string `yaml:"type"`
	// Options is the decoded config of Type's factory (for "transport":
	// *output.TransportConfig). Nil in NewDefaultConfig: like the input's,
	// its defaults come from the factory once the type is known.
	Options output.Config `yaml:"-"`
}

type LogConfig struct {
	Level      string `yaml:"level"`        // debug|info|warn|error, default info
	Format     string `yaml:"format"`       // json|text (file format; a terminal gets tint), default json
	File       string `yaml:"file"`         // log/edge-agent.log, relative to the install root
	MaxSizeMB  int    `yaml:"max-size-mb"`  // 100
	MaxBackups int    `yaml:"max-backups"`  // 5
	MaxAgeDays int    `yaml:"max-age-days"` // 0 = keep by count only
}
