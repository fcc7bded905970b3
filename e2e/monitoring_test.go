//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// The shipped monitoring files and the metrics reference they must agree with.
var (
	rulesFile     = filepath.Join("..", "dist", "monitoring", "edge-agent.rules.yml")
	rulesTestFile = filepath.Join("..", "dist", "monitoring", "edge-agent.rules.test.yml")
	dashboardFile = filepath.Join("..", "dist", "monitoring", "edge-agent.dashboard.json")
	metricsDoc    = filepath.Join("..", "docs", "metrics.md")
)

// promTool is build/prometheus/NAME, built by `make prometheus`. Without it
// a CI run fails; elsewhere the test skips and says so on stderr, so a
// local run without the tools does not pass silently.
func promTool(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "build", "prometheus", name))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode()&0o111 != 0 {
		return path
	}
	msg := fmt.Sprintf("%s is not built: run `make prometheus` (prometheus and promtool into build/prometheus)", name)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	fmt.Fprintf(os.Stderr, "SKIP %s: %s\n", t.Name(), msg)
	t.Skip(msg)
	return ""
}

// ruleFile is the shape of the shipped rules: alerting rules only.
type ruleFile struct {
	Groups []struct {
		Name  string      `yaml:"name"`
		Rules []alertRule `yaml:"rules"`
	} `yaml:"groups"`
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalWithOptions(b, &rf, yaml.Strict()); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(rf.Groups) == 0 || len(rf.Groups[0].Rules) == 0 {
		t.Fatalf("%s holds no rules", rulesFile)
	}
	return rf
}

func (rf ruleFile) alerts() []alertRule {
	var out []alertRule
	for _, g := range rf.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// derived writes a copy of rf into dir, with each rule changed by edit,
// and checks it with promtool: a test runs rules generated from the
// shipped ones, never rules of its own. The expressions are left alone.
func derived(t *testing.T, rf ruleFile, promtool, dir string, edit func(*alertRule)) string {
	t.Helper()
	for gi := range rf.Groups {
		rules := slices.Clone(rf.Groups[gi].Rules)
		for ri := range rules {
			expr := rules[ri].Expr
			rules[ri].Annotations = cloneMap(rules[ri].Annotations)
			edit(&rules[ri])
			if rules[ri].Expr != expr {
				t.Fatalf("%s: the test copy changed the expression", rules[ri].Alert)
			}
		}
		rf.Groups[gi].Rules = rules
	}
	b, err := yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "edge-agent.rules.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the test copy: %v\n%s\n%s", err, out, b)
	}
	return path
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The shipped rules pass promtool check rules, every alert has its
// runbook, and the promtool unit tests (one group per alert) pass on
// them with their production `for:` durations.
func TestMonitoringRules(t *testing.T) {
	promtool := promTool(t, "promtool")
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
	rf := loadRules(t)
	tests, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rf.alerts() {
		for _, a := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s has no %s", r.Alert, a)
			}
		}
		// The unit tests compare the summary only (below); the rest must
		// then be text without templates.
		for _, a := range []string{"description", "runbook"} {
			if strings.Contains(r.Annotations[a], "{{") {
				t.Errorf("%s: %s holds a template, which the unit tests would not render", r.Alert, a)
			}
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s has no severity", r.Alert)
		}
		if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n        exp_alerts:") {
			t.Errorf("%s has no unit test that expects it to fire", r.Alert)
		}
	}

	dir := t.TempDir()
	derived(t, rf, promtool, dir, func(r *alertRule) {
		r.Annotations = map[string]string{"summary": r.Annotations["summary"]}
	})
	testCopy := filepath.Join(dir, filepath.Base(rulesTestFile))
	if err := os.WriteFile(testCopy, tests, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", testCopy).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

// docMetric is one metric of docs/metrics.md.
type docMetric struct {
	typ string
	// live is false for the series Prometheus records itself (`up`) and
	// for those marked conditional: not in every /metrics.
	live bool
}

// documentedMetrics reads the metric tables of docs/metrics.md: rows whose
// first cell is a metric name in backquotes and whose second is its type.
func documentedMetrics(t *testing.T) map[string]docMetric {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_:][a-z0-9_:]*)` \\| (counter|gauge|histogram|summary) \\|")
	out := map[string]docMetric{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		live := !strings.Contains(line, "*conditional*") && !strings.Contains(line, "*Prometheus*")
		out[m[1]] = docMetric{typ: m[2], live: live}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metrics in %s", len(out), metricsDoc)
	}
	return out
}

// liveMetrics are the metric families of one /metrics answer, by name.
func liveMetrics(t *testing.T, base string) map[string]string {
	t.Helper()
	code, body := httpGet(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// usedMetrics are the metric names in the rules' expressions and in the
// dashboard's queries and variables, each with where it is used.
func usedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	note := func(where, expr string) {
		for _, n := range metricNames(expr) {
			used[n] = append(used[n], where)
		}
	}
	for _, r := range loadRules(t).alerts() {
		note("alert "+r.Alert, r.Expr)
	}
	for where, expr := range dashboardQueries(t) {
		note(where, expr)
	}
	return used
}

// dashboard is the part of the Grafana model the tests read.
type dashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// labelValues is Grafana's variable query: its first argument is a series
// selector.
var labelValues = regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$`)

// dashboardQueries are every PromQL expression of the dashboard by where
// it is: the panels' targets and the selectors of the query variables.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	d := loadDashboard(t)
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		sel := labelValues.FindStringSubmatch(q)
		if sel == nil {
			t.Fatalf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
		}
		out["variable "+v.Name] = sel[1]
	}
	return out
}

// The dashboard's variables choose what every panel shows: each query
// selects by job and instance, and instance follows job.
func TestMonitoringDashboard(t *testing.T) {
	d := loadDashboard(t)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["job"] != "query" || vars["instance"] != "query" {
		t.Fatalf("variables %v, want datasource, job and instance", vars)
	}
	queries := dashboardQueries(t)
	if !strings.Contains(queries["variable instance"], `job=~"$job"`) {
		t.Errorf("the instance variable does not follow job: %q", queries["variable instance"])
	}
	panels := 0
	for where, expr := range queries {
		if !strings.HasPrefix(where, "panel ") {
			continue
		}
		panels++
		for _, sel := range []string{`job=~"$job"`, `instance=~"$instance"`} {
			if strings.Count(expr, "{") != strings.Count(expr, sel) {
				t.Errorf("%s: not every selector has %s: %s", where, sel, expr)
			}
		}
	}
	if panels < 15 {
		t.Errorf("%d panel queries", panels)
	}
}

// PromQL words that are not metric names.
var promqlWords = map[string]bool{
	"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "offset": true, "bool": true, "inf": true, "nan": true,
}

var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	grafanaVar     = regexp.MustCompile(`\$\{?\w+\}?`)
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
)

// metricNames are the metric names an expression selects: identifiers
// that are not functions, keywords, label names or Grafana variables.
func metricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	s = grafanaVar.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringSubmatchIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if loc[2] >= 0 || promqlWords[word] {
			continue // a function call or a keyword
		}
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or unit of a number
		}
		if !slices.Contains(out, word) {
			out = append(out, word)
		}
	}
	return out
}

func TestMetricNamesOfAnExpression(t *testing.T) {
	for expr, want := range map[string][]string{
		`up{job="edge-agent"} == 0`: {"up"},
		`deriv(edge_agent_wal_bytes[15m]) > 0 and edge_agent_oldest_pending_age_seconds > 60`:                             {"edge_agent_wal_bytes", "edge_agent_oldest_pending_age_seconds"},
		`sum by (job, instance) (increase(a_total{result=~"x|y"}[5m])) > 0 and on (job, instance) max by (job) (b) > 1e3`: {"a_total", "b"},
		`histogram_quantile(0.99, sum by (le) (rate(h_bucket{job=~"$job"}[$__rate_interval])))`:                           {"h_bucket"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// baseName maps a histogram's series (_bucket, _sum, _count) to its
// metric when that is a documented histogram.
func baseName(name string, doc map[string]docMetric) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suffix); ok && doc[b].typ == "histogram" {
			return b
		}
	}
	return name
}

// Every metric the dashboard and the rules use is documented and served
// by a running agent; every documented metric is served, unless the
// reference marks it conditional or recorded by Prometheus.
func TestMonitoringMetricNames(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	agent := root.startReady()
	want := makeLines(t.Name(), 0, 50)
	root.createFile("in/app.log").lines(want)
	rc.waitDelivered(want, deliverTimeout)

	doc := documentedMetrics(t)
	live := liveMetrics(t, root.apiBase())
	used := usedMetrics(t)
	if len(used) < 10 {
		t.Fatalf("found only %d metric names in the rules and the dashboard: %v", len(used), used)
	}
	for name, where := range used {
		base := baseName(name, doc)
		d, ok := doc[base]
		if !ok {
			t.Errorf("%s (%s) is not in docs/metrics.md", name, strings.Join(where, ", "))
			continue
		}
		if d.live && live[base] == "" {
			t.Errorf("%s (%s) is documented but not in the agent's /metrics", name, strings.Join(where, ", "))
		}
	}
	for name, d := range doc {
		switch typ := live[name]; {
		case !d.live:
		case typ == "":
			t.Errorf("docs/metrics.md documents %s, which the running agent does not serve (mark it *conditional* if it may be absent)", name)
		case typ != d.typ:
			t.Errorf("%s is a %s in docs/metrics.md and a %s in /metrics", name, d.typ, typ)
		}
	}
	for name := range live {
		if strings.HasPrefix(name, "edge_agent_") {
			if _, ok := doc[name]; !ok {
				t.Errorf("/metrics serves %s, which docs/metrics.md does not document", name)
			}
		}
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
}

// prometheus is a running Prometheus of the test.
type prometheus struct {
	t    *testing.T
	base string
}

// startPrometheus runs a Prometheus on loopback with its data in a temp
// dir, scraping the agent at target every second and evaluating rules
// every second. The test's cleanup kills it by pid.
func startPrometheus(t *testing.T, target, rules string) *prometheus {
	t.Helper()
	bin := promTool(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: edge-agent
    static_configs:
      - targets: [%q]
`, rules, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// Prometheus takes its listen address by number and cannot report a
	// port it picked, so a port is held, released just before the start,
	// and a start another socket beat to it is retried on a new one.
	const attempts = 5
	for attempt := 1; ; attempt++ {
		h := holdPort(t)
		listen := "127.0.0.1:" + strconv.Itoa(h.port)
		h.release()
		proc := startProc(t, "prometheus", dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, bin,
			"--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+listen, "--log.level=warn")
		p := &prometheus{t: t, base: "http://" + listen}
		exited := false
		eventually(t, 60*time.Second, "prometheus ready", func() bool {
			select {
			case <-proc.done:
				exited = true
				return true
			default:
			}
			resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(p.base + "/-/ready")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if !exited {
			return p
		}
		if attempt == attempts || !stderrSays(proc.stderr, "address already in use") {
			t.Fatalf("prometheus exited at start (attempt %d):\n%s", attempt, tail(proc.stderr, 20))
		}
	}
}

// api GETs a Prometheus API path and decodes its data.
func (p *prometheus) api(path string, q url.Values, data any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var doc struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w: %s", path, err, b)
	}
	if doc.Status != "success" {
		return fmt.Errorf("%s: %s", path, doc.Error)
	}
	return json.Unmarshal(doc.Data, data)
}

// query evaluates expr now and returns how many series it gives.
func (p *prometheus) query(expr string) (int, error) {
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	err := p.api("/api/v1/query", url.Values{"query": {expr}}, &data)
	return len(data.Result), err
}

// alerts are the active alerts by name: pending or firing.
func (p *prometheus) alerts() map[string]string {
	p.t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.api("/api/v1/alerts", nil, &data); err != nil {
		p.t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range data.Alerts {
		out[a.Labels["alertname"]] = a.State
	}
	return out
}

// A real Prometheus scrapes a running agent while the engine goes away:
// the backlog grows and the engine takes nothing, so EdgeAgentBacklogGrowing
// and EdgeAgentEngineDown fire, EdgeAgentEngineRefusing does not; the engine
// then returns with another token, and EdgeAgentEngineRefusing fires; when
// it returns as it should and the backlog drains, all resolve. The rules are the shipped ones with every `for:`
// cut to 2s: the expressions, their windows and thresholds are as shipped,
// which makes the outage last a little over the minute the oldest pending
// row must wait.
func TestPrometheusAlertsFireAndResolve(t *testing.T) {
	skipShort(t)
	promtool := promTool(t, "promtool")
	rules := derived(t, loadRules(t), promtool, t.TempDir(), func(r *alertRule) {
		if r.For != "" {
			r.For = "2s"
		}
	})
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port, api: true})
	agent := root.startReady()
	listen := root.opts.httpListen

	// An application writing ten lines a second for the whole test.
	appLog := root.createFile("in/app.log")
	stopWriting := make(chan struct{})
	written := make(chan []string)
	go func() {
		var all []string
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 6000; i++ { // ten minutes at most
			select {
			case <-stopWriting:
				written <- all
				return
			case <-tick.C:
			}
			line := makeLines(t.Name(), i, 1)
			if _, err := appLog.f.WriteString(line[0] + "\n"); err != nil {
				written <- all
				return
			}
			all = append(all, line[0])
		}
		<-stopWriting
		written <- all
	}()
	defer func() {
		select {
		case stopWriting <- struct{}{}:
			<-written
		default:
		}
	}()

	prom := startPrometheus(t, listen, rules)
	eventually(t, 30*time.Second, "Prometheus to scrape the agent", func() bool {
		n, err := prom.query(`up{job="edge-agent"} == 1 and on (instance) edge_agent_events_acked_total > 0`)
		return err == nil && n == 1
	})
	// Every dashboard query runs in this Prometheus, on the agent's series.
	for where, expr := range dashboardQueries(t) {
		e := strings.NewReplacer(`$__rate_interval`, `5s`, `$job`, `edge-agent`, `$instance`, `.+`).Replace(expr)
		if _, err := prom.query(e); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
	if a := prom.alerts(); len(a) != 0 {
		t.Fatalf("alerts while the agent delivers: %v", a)
	}

	stopped := time.Now()
	rc.stop()
	firing := func(names ...string) bool {
		a := prom.alerts()
		for _, n := range names {
			if a[n] != "firing" {
				return false
			}
		}
		return true
	}
	eventually(t, 3*time.Minute, "EdgeAgentBacklogGrowing and EdgeAgentEngineDown to fire", func() bool {
		return firing("EdgeAgentBacklogGrowing", "EdgeAgentEngineDown")
	})
	t.Logf("backlog and engine-down alerts firing %s after the engine stopped; active: %v", time.Since(stopped).Round(time.Second), prom.alerts())
	if a := prom.alerts(); a["EdgeAgentDown"] != "" || a["EdgeAgentDeadRows"] != "" || a["EdgeAgentEngineRefusing"] != "" {
		t.Errorf("alerts that do not apply to an engine that is down: %v", a)
	}

	// The engine comes back refusing the agent's token: a refusal, not an
	// outage.
	refusing := time.Now()
	wrong := startReceiverAt(t, port, "not-the-agent-token-0123")
	eventually(t, 2*time.Minute, "EdgeAgentEngineRefusing to fire and EdgeAgentEngineDown to resolve", func() bool {
		a := prom.alerts()
		return a["EdgeAgentEngineRefusing"] == "firing" && a["EdgeAgentEngineDown"] == ""
	})
	t.Logf("engine-refusing alert firing %s after the wrong token; active: %v", time.Since(refusing).Round(time.Second), prom.alerts())
	wrong.stop()

	returned := time.Now()
	rc2 := startReceiverAt(t, port, "e2e-token-0123456789")
	eventually(t, 2*time.Minute, "every engine alert to resolve", func() bool {
		a := prom.alerts()
		return a["EdgeAgentBacklogGrowing"] == "" && a["EdgeAgentEngineRefusing"] == "" && a["EdgeAgentEngineDown"] == ""
	})
	t.Logf("all resolved %s after the engine returned", time.Since(returned).Round(time.Second))

	stopWriting <- struct{}{}
	lines := <-written
	eventually(t, deliverTimeout, "every line delivered", func() bool {
		got := rc.received()
		for p, n := range rc2.received() {
			got[p] += n
		}
		return len(checkDelivery(lines, got).missing) == 0
	})
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
}

// stderrSays reports whether the file at path holds s.
func stderrSays(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}
