package config

import (
	"errors"
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
)

// Validate reports every problem at once (errors.Join of *FieldError, each
// wrapping ErrInvalid), naming the full key and, for a loaded Config, the
// line:column where it is written.
func (c *Config) Validate() error {
	var p problems
	c.validate(&p)
	return p.join()
}

// checker adds problems keyed by canonical key, skipping keys that already
// have one (a type error already said what is wrong with that key).
type checker struct {
	c *Config
	p *problems
}

func (k checker) fail(canonical string, err error) {
	fe := k.c.where.fieldError(canonical, err)
	if k.p.has(fe.Key) {
		return
	}
	k.p.add(fe)
}

func (k checker) failf(canonical, format string, args ...any) {
	k.fail(canonical, fmt.Errorf(format, args...))
}

func (c *Config) validate(p *problems) {
	k := checker{c: c, p: p}
	c.validateAgent(k)
	c.validateInput(k)
	c.validateQueue(k)
	c.validateOutput(k)
	c.validateLog(k)
	k.component("http", c.HTTP.Validate())
	k.component("management", c.Management.Validate())
}

func (c *Config) validateAgent(k checker) {
	k.component("agent", c.Agent.Settings.Validate())
	k.component("agent", processing.Validate(c.Agent.Processors))
	if c.Agent.Delivery != agent.DeliveryCheckpoint {
		return
	}
	cp, ok := c.Output.Options.(output.Checkpointer)
	if !ok {
		k.fail("agent.delivery-guarantee", fmt.Errorf("CHECKPOINT needs an output that can ask the engine about its checkpoints (output.type transport); output.type %s cannot: use BEST_EFFORT", c.Output.Type))
		return
	}
	k.component("output", cp.CheckCheckpoint())
}

// keyedError is how a component's Validate names the key of a problem,
// relative to the component's section (check.FieldError,
// input.FieldError, transport.FieldError all have this shape).
type keyedError interface {
	error
	FieldKey() string
	Unwrap() error
}

// component files the problems of a component's Validate under section,
// with the position of each key.
func (k checker) component(section string, err error) {
	if err == nil {
		return
	}
	for _, e := range flatten(err) {
		var ke keyedError
		if errors.As(e, &ke) {
			k.fail(join(section, ke.FieldKey()), ke.Unwrap())
			continue
		}
		k.fail(section, e)
	}
}

// validateInput checks the inputs: ids present where required and unique
// (each keys its saved positions; the agent's rule, agent.CheckInputs),
// and each input's own Validate.
func (c *Config) validateInput(k checker) {
	if len(c.Inputs) == 0 {
		if !c.where.has("inputs") {
			// An inputs list that did not decode has its own error.
			k.fail("input", errInputMissing())
		}
		return
	}
	k.component("", agent.CheckInputs(c.inputSpecs()))
	for _, e := range c.Inputs {
		if e.Config == nil {
			k.failf(e.Key, "no config for input type %q", e.Type)
			continue
		}
		k.component(e.Key, e.Config.Validate())
		k.component(e.Key, processing.Validate(e.Processors))
		k.component(e.Key, agent.CheckQueueDrop(e.QueueDrop))
	}
}

// flatten undoes errors.Join (possibly nested).
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func (c *Config) validateQueue(k checker) {
	k.component("queue", c.Queue.Options.Validate())
	k.component("queue", c.Queue.QueueSettings.Validate())
	if c.Queue.Reorders() && c.Agent.Delivery == agent.DeliveryNon {
		key := "queue.drain"
		if len(c.Queue.QueueSettings.Lanes) > 0 {
			key = "queue.lanes"
		}
		k.fail(key, fmt.Errorf("lanes and newest-first draining need a WAL to reorder: agent.delivery-guarantee %s keeps none; use BEST_EFFORT or CHECKPOINT", c.Agent.Delivery))
	}
	k.component("retry", c.Retry.Validate())
}

// validateOutput leaves every output key to the output type's own
// Validate: the transport's numbers, names and secrets are checked by the
// client and the codec themselves, so `config check` refuses exactly what
// `start` would.
func (c *Config) validateOutput(k checker) {
	if c.Output.Options == nil {
		k.failf("output.type", "output type %q has no options: take them from its factory's NewDefaultConfig", c.Output.Type)
		return
	}
	k.component("output", c.Output.Options.Validate())
	k.component("output.rate-limit", c.Output.RateLimit.Validate())
}

func (c *Config) validateLog(k checker) {
	k.component("log", c.Log.Validate())
}
