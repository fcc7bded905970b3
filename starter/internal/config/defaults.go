package config

import "github.com/edge-agent/edge-agent/starter/internal/wal"

// NewDefaultConfig returns every default: the Java agent's (notes §3) and
// ours. Input stays nil: its defaults come from the input type's factory
// once input.type is known, so a default Config alone does not validate.
func NewDefaultConfig() *Config {
	return &Config{
		Agent: AgentConfig{
			DeliveryGuarantee: DeliveryBestEffort,
			IdleSleepMs:       200,
			BulkMaxSize:       256,
			FlushIntervalMs:   1000,
			ShutdownTimeoutMs: 10000,
		},
		Queue: QueueConfig{
			Options:             wal.DefaultOptions(),
			PollBatchSize:       128,
			CleanupBatchSize:    128,
			AckedRetentionMs:    0,
			ResurrectBatchSize:  100,
			ResurrectIntervalMs: 60000,
			MaxBytes:            1 << 30,
		},
		Retry: RetryConfig{
			MaxAttempts:  16,
			BackoffMs:    250,
			BackoffMaxMs: 300000,
		},
		Output: OutputConfig{
			Type: defaultOutputType,
		},
		Log: LogConfig{
			Level:      "info",
			Format:     "json",
			File:       "log/edge-agent.log",
			MaxSizeMB:  100,
			MaxBackups: 5,
		},
		InputType: defaultInputType,
	}
}
