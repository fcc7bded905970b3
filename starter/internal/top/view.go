package top

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// frame is what one screen shows.
type frame struct {
	prev, cur *sample
	err       error
	sortBy    SortKey
	filter    string
	paused    bool
	interval  time.Duration
	// keys adds the key help line (the interactive view).
	keys bool
}

// minWidth is the narrowest the layout is drawn for; narrower terminals
// get it cut at their edge.
const minWidth = 60

// render draws f in width columns and at most height lines (0: no limit).
// Every line is cut to width, and the file list is cut to what fits, so
// an 80×24 terminal shows the whole summary and the first files.
func render(f frame, width, height int) string {
	if width <= 0 {
		width = 80
	}
	if f.cur == nil {
		lines := []string{"edge-agent top"}
		if f.err != nil {
			lines = append(lines, "cannot read the agent: "+oneLine(f.err.Error()), fmt.Sprintf("retrying every %s", f.interval))
		} else {
			lines = append(lines, "waiting for the agent's first answer…")
		}
		return finish(lines, f, width, height)
	}
	r := rates{prev: f.prev, cur: f.cur}
	lines := summaryLines(f, r)
	lines = append(lines, inputLines(f, r)...)
	if f.cur.st.ListsFiles() {
		lines = append(lines, fileLines(f, r, width, height, len(lines))...)
	}
	return finish(lines, f, width, height)
}

// summaryLines are the header, health, output, WAL and input summary.
func summaryLines(f frame, r rates) []string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	st := f.cur.st
	head := fmt.Sprintf("edge-agent %s  %s  up %s  agent %s  %s", orDash(st.Version), st.State,
		duration(st.UptimeSeconds), short(st.AgentID, 12), f.cur.at.Format("15:04:05"))
	if f.paused {
		head += "  [PAUSED]"
	}
	add("%s", head)
	lines = append(lines, healthLines(st.Health)...)

	c := st.Counters
	if c == nil {
		c = &api.Counters{}
	}
	window := "-"
	if st.Window > 0 {
		window = fmt.Sprint(st.Window)
	}
	add("output  %s  out %s ev/s  sent %s/s  send %s  window %s  reconnects %d  retries %d",
		orDash(st.Connection), r.per(func(s api.Status) (uint64, bool) { return ctr(s).Acked, true }),
		r.per(func(s api.Status) (uint64, bool) { return ctr(s).Sent, true }),
		r.meanSend(), window, c.Reconnects, c.Retries)
	for i, e := range st.Endpoints {
		// Each endpoint of output.endpoints: * marks those sent to.
		mark := " "
		if e.Active {
			mark = "*"
		}
		get := func(s api.Status) (uint64, bool) {
			if i < len(s.Endpoints) && s.Endpoints[i].Endpoint == e.Endpoint {
				return s.Endpoints[i].Received, true
			}
			return 0, false
		}
		add("      %s %s  %s  in %s ev/s  received %d", mark, e.Endpoint, orDash(e.State), r.per(get), e.Received)
	}
	if rl := st.RateLimit; rl != nil {
		add("        rate cap %s  throttled %s  backlog ETA %s", rateCap(rl), duration(c.SendThrottledSeconds), duration(rl.BacklogETASeconds))
	}
	if st.LastError != "" {
		age := ""
		if st.LastErrorAt != nil {
			age = " (" + duration(f.cur.at.Sub(*st.LastErrorAt).Seconds()) + " ago)"
		}
		add("        last error%s: %s", age, oneLine(st.LastError))
	}
	w := st.WAL
	add("wal     pending %d  sending %d  received %d  dead %d  bytes %s  oldest %s",
		w.Pending, w.Sending, w.Received, w.Dead, sizeOf(w.Bytes), duration(w.OldestPendingAgeSeconds))
	bp := "off"
	if st.Backpressure {
		bp = "ON (reading paused: queue above queue.max-bytes)"
	}
	add("        file %s  dropped %d  failed %d  backpressure %s", sizeOf(w.FileBytes), c.Dropped, c.Failed, bp)
	if len(w.Lanes) > 0 {
		parts := make([]string, len(w.Lanes))
		for i, l := range w.Lanes {
			parts[i] = fmt.Sprintf("%s %d, %s (oldest %s)", l.Name, l.Rows, sizeOf(l.Bytes), duration(l.OldestAgeSeconds))
		}
		add("        lanes   %s", strings.Join(parts, "  "))
	}
	if st.WALError != "" {
		add("        WAL error: %s", oneLine(st.WALError))
	}
	in := fmt.Sprintf("input   in %s ev/s", r.per(func(s api.Status) (uint64, bool) { return ctr(s).EventsRead, true }))
	if st.Input != nil {
		in += "  " + r.bytesPer(func(s api.Status) (int64, bool) {
			if s.Input == nil {
				return 0, false
			}
			return s.Input.Value(input.KeyBytesRead)
		}) + "/s"
		if st.ListsFiles() {
			in += fmt.Sprintf("  files %d open of %d", openOf(st.Files), len(st.Files))
		}
		for _, k := range []struct{ key, name string }{{input.KeyTruncatedLines, "truncated"}, {input.KeyErrors, "errors"}} {
			if n, ok := st.Input.Value(k.key); ok {
				in += fmt.Sprintf("  %s %d", k.name, n)
			}
		}
	}
	add("%s", in)
	return lines
}

// inputLines are the table of inputs, the filtered one marked; none
// when the agent lists no inputs. An input that reads no files shows "-"
// for files and lag, and its summary under its row (one that reads files
// has them in the file list).
func inputLines(f frame, r rates) []string {
	st := f.cur.st
	if len(st.Inputs) == 0 {
		return nil
	}
	lines := []string{"", fmt.Sprintf("%-16s %-8s %9s %10s %10s %10s", "INPUT", "TYPE", "FILES", "EVENTS/S", "BYTES/S", "LAG")}
	for _, in := range st.Inputs {
		id := in.ID
		mark := " "
		if f.filter == id {
			mark = "*"
		}
		files, lag := "-", "-"
		if in.Files != nil {
			files, lag = fmt.Sprintf("%d/%d", openOf(in.Files), len(in.Files)), sizeOf(lagOf(in.Files))
		}
		lines = append(lines, fmt.Sprintf("%s%-15s %-8s %9s %10s %10s %10s", mark, short(id, 15), short(in.Type, 8), files,
			r.per(func(s api.Status) (uint64, bool) { return inputCounter(s, id, input.KeyEvents) }),
			r.bytesPer(func(s api.Status) (int64, bool) {
				v, ok := inputCounter(s, id, input.KeyBytesRead)
				return int64(v), ok
			}),
			lag))
		if in.Files == nil && in.Summary != "" {
			lines = append(lines, "  "+oneLine(in.Summary))
		}
		for _, l := range in.Lines {
			if l.Brief {
				lines = append(lines, "  "+oneLine(l.Text))
			}
		}
	}
	return lines
}

// fileLines are the table of files, filtered and sorted, cut to the
// rows left below the used lines of a screen height rows tall.
func fileLines(f frame, r rates, width, height, used int) []string {
	files := r.files(f.filter)
	sortFiles(files, f.sortBy)
	filter := "all inputs"
	if f.filter != "" {
		filter = "input " + f.filter
	}
	pathW := max(width, minWidth) - 36
	lines := []string{"", fmt.Sprintf("FILES (%d, %s, by %s)", len(files), filter, f.sortBy),
		fmt.Sprintf("%-*s %11s %11s %11s", pathW, "PATH", "READ/S", "LAG", "SIZE")}
	room := len(files)
	if height > 0 {
		// The lines still to come: the key line, an error line.
		room = height - used - len(lines) - footerLines(f)
	}
	for i, fl := range files {
		if i >= room {
			break
		}
		if i == room-1 && len(files) > room {
			lines = append(lines, fmt.Sprintf("… %d more", len(files)-i))
			break
		}
		open := " "
		if !fl.Open {
			open = "-"
		}
		lines = append(lines, fmt.Sprintf("%s%-*s %11s %11s %11s", open, pathW-1, leftCut(fl.Path, pathW-1), fl.rate, sizeOf(fl.Lag), sizeOf(fl.Size)))
	}
	return lines
}

func footerLines(f frame) int {
	n := 0
	if f.keys {
		n++
	}
	if f.err != nil && f.cur != nil {
		n++
	}
	return n
}

// finish adds the footer, cuts every line to width and the whole to height.
func finish(lines []string, f frame, width, height int) string {
	if f.err != nil && f.cur != nil {
		lines = append(lines, "cannot read the agent (showing the last answer): "+oneLine(f.err.Error()))
	}
	if f.keys {
		filter := "all"
		if f.filter != "" {
			filter = f.filter
		}
		pause := "pause"
		if f.paused {
			pause = "resume"
		}
		lines = append(lines, fmt.Sprintf("s sort (%s)  i input (%s)  p %s  q quit", f.sortBy, filter, pause))
	}
	if height > 0 && len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	return strings.Join(lines, "\n")
}

// healthLines are the judgement with each component's status (upper case
// when it is the unhealthy one), and the reason on a line of its own.
func healthLines(h *api.Health) []string {
	if h == nil {
		return []string{"health  -"}
	}
	s := "health  ok"
	if !h.Healthy {
		s = "health  UNHEALTHY"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(h.Components)) {
		c := h.Components[name]
		word := c.Status
		if !c.Healthy {
			word = strings.ToUpper(word)
		}
		parts = append(parts, name+" "+orDash(word))
	}
	if len(parts) > 0 {
		s += "  " + strings.Join(parts, ", ")
	}
	if h.Healthy {
		return []string{s}
	}
	return []string{s, "        reason: " + oneLine(h.Reason)}
}

// rates compares two readings.
type rates struct{ prev, cur *sample }

func (r rates) seconds() float64 {
	if r.prev == nil || r.cur == nil {
		return 0
	}
	return r.cur.at.Sub(r.prev.at).Seconds()
}

// perSecond is the rate of a counter between the two readings; ok=false
// without two readings, or when the counter went back (the agent
// restarted in between).
func perSecond[T uint64 | int64](r rates, get func(api.Status) (T, bool)) (float64, bool) {
	dt := r.seconds()
	if dt <= 0 {
		return 0, false
	}
	a, okA := get(r.prev.st)
	b, okB := get(r.cur.st)
	if !okA || !okB || b < a {
		return 0, false
	}
	return float64(b-a) / dt, true
}

// per is a counter's rate as a count, "-" when there is none.
func (r rates) per(get func(api.Status) (uint64, bool)) string {
	v, ok := perSecond(r, get)
	if !ok {
		return "-"
	}
	return count(v)
}

// bytesPer is a byte counter's rate as a size, "-" when there is none.
func (r rates) bytesPer(get func(api.Status) (int64, bool)) string {
	v, ok := perSecond(r, get)
	if !ok {
		return "-"
	}
	return sizeOf(int64(v))
}

// meanSend is the mean duration of the sends between the two readings.
func (r rates) meanSend() string {
	if r.seconds() <= 0 {
		return "-"
	}
	a, b := ctr(r.prev.st), ctr(r.cur.st)
	if b.Sends <= a.Sends {
		return "-"
	}
	d := time.Duration((b.SendSeconds - a.SendSeconds) / float64(b.Sends-a.Sends) * float64(time.Second))
	return d.Round(100 * time.Microsecond).String()
}

// fileRow is one file of the list with its read rate.
type fileRow struct {
	api.File
	rate string
	// bps orders by rate; -1 when unknown.
	bps float64
}

// files lists the files of the input filter names (all when ""), each
// with the rate its offset moved at.
func (r rates) files(filter string) []fileRow {
	pick := func(st api.Status) []api.File {
		if filter == "" {
			return st.Files
		}
		for _, in := range st.Inputs {
			if in.ID == filter {
				return in.Files
			}
		}
		return nil
	}
	before := map[string]int64{}
	dt := r.seconds()
	if dt > 0 {
		for _, f := range pick(r.prev.st) {
			before[f.Path+"\x00"+f.Identity] = f.Offset
		}
	}
	var out []fileRow
	for _, f := range pick(r.cur.st) {
		row := fileRow{File: f, rate: "-", bps: -1}
		if off, ok := before[f.Path+"\x00"+f.Identity]; ok && f.Offset >= off {
			row.bps = float64(f.Offset-off) / dt
			row.rate = sizeOf(int64(row.bps))
		}
		out = append(out, row)
	}
	return out
}

func sortFiles(fs []fileRow, by SortKey) {
	slices.SortStableFunc(fs, func(a, b fileRow) int {
		switch by {
		case SortRate:
			if c := cmp.Compare(b.bps, a.bps); c != 0 {
				return c
			}
		case SortLag:
			if c := cmp.Compare(b.Lag, a.Lag); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Path, b.Path)
	})
}

func ctr(s api.Status) api.Counters {
	if s.Counters == nil {
		return api.Counters{}
	}
	return *s.Counters
}

// inputCounter is the figure under key of the input id; ok=false when
// the input is gone or does not report it.
func inputCounter(s api.Status, id, key string) (uint64, bool) {
	for _, in := range s.Inputs {
		if in.ID == id {
			n, ok := in.Value(key)
			return uint64(max(0, n)), ok
		}
	}
	return 0, false
}

func openOf(fs []api.File) int {
	n := 0
	for _, f := range fs {
		if f.Open {
			n++
		}
	}
	return n
}

func lagOf(fs []api.File) int64 {
	var n int64
	for _, f := range fs {
		n += max(0, f.Lag)
	}
	return n
}

// count writes a rate: 950, 12.3k, 4.56M.
func count(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100 || v == 0:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// sizeOf writes a size in binary units: 512 B, 1.5 KiB, 12.0 MiB.
func sizeOf(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit && exp < 4; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// duration writes seconds as 0s, 42s, 3m04s, 2h05m, 3d04h.
func duration(sec float64) string {
	d := time.Duration(max(0, sec)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// short cuts s to n runes, marking the cut.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}

// leftCut keeps the end of s (a path's file name matters most).
func leftCut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[len(r)-n:])
	}
	return "…" + string(r[len(r)-n+1:])
}

// cut cuts a line to width runes.
func cut(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width])
}

// rateCap says output.rate-limit in force, e.g. "100 ev/s, 64.0 KiB/s".
func rateCap(rl *api.RateLimit) string {
	var parts []string
	if rl.EventsPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("%g ev/s", rl.EventsPerSecond))
	}
	if rl.BytesPerSecond > 0 {
		parts = append(parts, sizeOf(rl.BytesPerSecond)+"/s")
	}
	return strings.Join(parts, ", ")
}
