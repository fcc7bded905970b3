package config

import "reflect"

// Changes is what differs between the config in force and a reloaded one.
type Changes struct {
	// Sections are the top-level sections whose values differ.
	Sections []string
	// RestartKeys are changed keys a running agent cannot apply: the WAL
	// is opened once (queue.path, queue.fsync, queue.drain,
	// queue.backlog-share, queue.lanes), the delivery guarantee
	// decides whether there is a WAL at all, the ids key the saved
	// positions and the engine's view of the agent, the log file is opened
	// once (log.level alone applies at once), the HTTP API listens once and
	// the OpAMP client connects once.
	RestartKeys []string
	// Output says the output's type or settings differ, so a reload
	// rebuilds it.
	Output bool
	// Inputs are the ids, as written ("" for an `input:` without one), of
	// the inputs added, removed, or whose type or settings differ; the
	// others keep running untouched.
	Inputs []string
}

// Changes compares c with next. It lives here, with the decoder, because
// only the config layer may look inside the plug-ins' configs by
// reflection; the scheduler is told what to rebuild.
func (c *Config) Changes(next *Config) Changes {
	var ch Changes
	agentSteps := !reflect.DeepEqual(c.Agent.Processors, next.Agent.Processors)
	// The rate cap is retuned in place: it rebuilds no output.
	ch.Output = c.Output.Type != next.Output.Type || c.Output.ID != next.Output.ID || !reflect.DeepEqual(c.Output.Options, next.Output.Options)
	ch.Inputs = changedInputs(c.Inputs, next.Inputs, agentSteps)
	section := func(name string, differs bool) {
		if differs {
			ch.Sections = append(ch.Sections, name)
		}
	}
	section("agent", !reflect.DeepEqual(c.Agent, next.Agent))
	section("queue", !reflect.DeepEqual(c.Queue, next.Queue))
	section("retry", c.Retry != next.Retry)
	inputs := len(ch.Inputs) > 0
	section("input", inputs && (c.singleInput() || next.singleInput()))
	section("inputs", inputs && (!c.singleInput() || !next.singleInput()))
	section("output", ch.Output || c.Output.RateLimit != next.Output.RateLimit)
	section("log", c.Log != next.Log)
	section("http", c.HTTP != next.HTTP)
	management := !reflect.DeepEqual(c.Management, next.Management)
	section("management", management)
	key := func(name string, differs bool) {
		if differs {
			ch.RestartKeys = append(ch.RestartKeys, name)
		}
	}
	key("queue.path", c.Queue.Path != next.Queue.Path)
	key("queue.fsync", c.Queue.Fsync != next.Queue.Fsync)
	// The lanes and the drain order are the WAL's too: its pending
	// indexes and how it hands out batch ids.
	key("queue.drain", c.Queue.Drain != next.Queue.Drain)
	key("queue.backlog-share", c.Queue.BacklogShare != next.Queue.BacklogShare)
	key("queue.lanes", !reflect.DeepEqual(c.Queue.QueueSettings.Lanes, next.Queue.QueueSettings.Lanes))
	key("queue.drop-from", c.Queue.DropFrom != next.Queue.DropFrom)
	key("agent.delivery-guarantee", c.Agent.Delivery != next.Agent.Delivery)
	key("agent.id", c.Agent.ID != next.Agent.ID)
	key("input.id", c.PinnedInputID() != next.PinnedInputID())
	key("output.id", c.Output.ID != next.Output.ID)
	key("log.file", c.Log.File != next.Log.File)
	key("log.format", c.Log.Format != next.Log.Format)
	key("log.max-size-mb", c.Log.MaxSizeMB != next.Log.MaxSizeMB)
	key("log.max-backups", c.Log.MaxBackups != next.Log.MaxBackups)
	key("log.max-age-days", c.Log.MaxAgeDays != next.Log.MaxAgeDays)
	key("http.listen", c.HTTP.Listen != next.HTTP.Listen)
	key("http.token", c.HTTP.Token != next.HTTP.Token)
	key("http.pprof", c.HTTP.Pprof != next.HTTP.Pprof)
	key("http.tls", c.HTTP.TLS != next.HTTP.TLS)
	// The OpAMP client connects once; a remote config never changes it.
	key("management", management)
	return ch
}

// singleInput says the inputs are the `input:` form.
func (c *Config) singleInput() bool {
	return len(c.Inputs) == 1 && c.Inputs[0].OptionalID
}

// changedInputs lists the ids of entries only one list has, or whose type,
// config or processors differ (all of them when the agent's processors
// do), in the order of next then of old.
func changedInputs(old, next []InputEntry, agentSteps bool) []string {
	byID := make(map[string]InputEntry, len(old))
	for _, e := range old {
		byID[e.ID] = e
	}
	var out []string
	seen := make(map[string]bool, len(next))
	for _, e := range next {
		seen[e.ID] = true
		if o, ok := byID[e.ID]; !ok || agentSteps || o.Type != e.Type || !reflect.DeepEqual(o.Config, e.Config) || !reflect.DeepEqual(o.Processors, e.Processors) || o.QueueDrop != e.QueueDrop {
			out = append(out, e.ID)
		}
	}
	for _, e := range old {
		if !seen[e.ID] {
			out = append(out, e.ID)
		}
	}
	return out
}
