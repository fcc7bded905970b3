// Package top is `edge-agent top`: a live view of a running agent, read
// from its local HTTP API (/debug/status) once per interval. Rates are the
// difference of two readings over the time between them, so the first
// frame after a start shows none.
package top

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// Source reads the running agent; *api.Client is one.
type Source interface {
	Status(ctx context.Context) (api.Status, error)
}

// DefaultInterval is how often the view asks the agent.
const DefaultInterval = time.Second

// Options configure a view.
type Options struct {
	Source Source
	// Interval defaults to DefaultInterval.
	Interval time.Duration
	// Now stamps each reading; defaults to time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// sample is one reading of the agent and when it was taken.
type sample struct {
	st api.Status
	at time.Time
}

// read takes one sample.
func read(ctx context.Context, o Options) (sample, error) {
	st, err := o.Source.Status(ctx)
	if err != nil {
		return sample{}, err
	}
	return sample{st: st, at: o.Now()}, nil
}

// SortKey orders the file list.
type SortKey int

// The orders `s` cycles through.
const (
	SortLag  SortKey = iota // most bytes behind first
	SortRate                // fastest read first
	SortPath                // by path
	sortKeys
)

func (k SortKey) String() string {
	switch k {
	case SortRate:
		return "rate"
	case SortPath:
		return "path"
	}
	return "lag"
}

type (
	fetchedMsg struct {
		s   sample
		err error
	}
	tickMsg struct{}
)

// Model is the bubbletea model of the view. It always keeps the last two
// readings; while paused it shows the two it had when paused.
type Model struct {
	ctx  context.Context
	opts Options

	prev, cur *sample
	// shownPrev, shownCur are what View draws: the live readings, or
	// the ones frozen by a pause.
	shownPrev, shownCur *sample
	err                 error

	sortBy SortKey
	// filter is the input id shown in the file list; "" shows all.
	filter string
	paused bool

	width, height int
}

// New returns a model that reads o.Source under ctx. first, when not nil,
// is a reading already taken (the command checks the agent answers before
// it takes over the screen).
func New(ctx context.Context, o Options, first *api.Status) Model {
	o = o.withDefaults()
	m := Model{ctx: ctx, opts: o, width: 80, height: 24}
	if first != nil {
		m.cur = &sample{st: *first, at: o.Now()}
		m.shownCur = m.cur
	}
	return m
}

// Init asks the agent at once, or after one interval when New had a
// reading.
func (m Model) Init() tea.Cmd {
	if m.cur != nil {
		return m.tick()
	}
	return m.fetch()
}

func (m Model) fetch() tea.Cmd {
	ctx, o := m.ctx, m.opts
	return func() tea.Msg {
		s, err := read(ctx, o)
		return fetchedMsg{s: s, err: err}
	}
}

func (m Model) tick() tea.Cmd {
	return tea.Tick(m.opts.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles keys, the terminal's size and the readings. Exactly one
// reading or one tick is outstanding at any time, so readings never overlap.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "Q", "ctrl+c", "esc":
			return m, tea.Quit
		case "s":
			m.sortBy = (m.sortBy + 1) % sortKeys
		case "i", "f":
			m.filter = nextFilter(m.inputIDs(), m.filter)
		case "p", " ":
			m.paused = !m.paused
			if !m.paused {
				m.shownPrev, m.shownCur = m.prev, m.cur
			}
		}
	case fetchedMsg:
		m.err = msg.err
		if msg.err == nil {
			s := msg.s
			m.prev, m.cur = m.cur, &s
			if !m.paused {
				m.shownPrev, m.shownCur = m.prev, m.cur
			}
		}
		return m, m.tick()
	case tickMsg:
		return m, m.fetch()
	}
	return m, nil
}

// View draws the frame for the terminal's size.
func (m Model) View() string {
	return render(frame{
		prev: m.shownPrev, cur: m.shownCur, err: m.err,
		sortBy: m.sortBy, filter: m.filter, paused: m.paused,
		interval: m.opts.Interval, keys: true,
	}, m.width, m.height)
}

// inputIDs are the inputs of the reading shown, in config order.
func (m Model) inputIDs() []string {
	if m.shownCur == nil {
		return nil
	}
	var ids []string
	for _, in := range m.shownCur.st.Inputs {
		ids = append(ids, in.ID)
	}
	return ids
}

// nextFilter cycles all → each input → all. A filter naming an input that
// went away (a reload) starts over.
func nextFilter(ids []string, cur string) string {
	if cur == "" {
		if len(ids) > 0 {
			return ids[0]
		}
		return ""
	}
	for i, id := range ids {
		if id == cur && i+1 < len(ids) {
			return ids[i+1]
		}
	}
	return ""
}
