package server

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rubricforge/rubricforge/internal/promtext"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/reward/judge"
)

// endpoints are the paths rewardd serves, for its metrics.
var endpoints = []string{pathGetReward, pathScore, pathV1Score, pathV1ScoreGroup, pathRubricatorPrompt, pathRubricStats, pathVerify, pathORSCatalog, pathORSSession, pathORSCall, pathHealthz, pathMetrics, pathOther}

// serverMetrics are rewardd's counters.
type serverMetrics struct {
	mu       sync.Mutex
	requests map[requestKey]int64 // by endpoint and status code
	latency  map[string]*promtext.Histogram
	inflight atomic.Int64
	// bodiesReading counts the requests whose body is being read.
	bodiesReading atomic.Int64
	items         map[itemKey]int64 // results by scheme and outcome
	judged        window            // judged responses and judge failures, last minute
}

// windowSeconds is the span of the recent judge-failure rate.
const windowSeconds = 60

// window counts judged responses and judge failures over the last minute,
// by second. It is safe for concurrent use.
type window struct {
	mu        sync.Mutex
	sec       [windowSeconds]int64 // the Unix second each slot counts
	n, failed [windowSeconds]int64
}

func (w *window) add(now time.Time, n, failed int64) {
	if n == 0 {
		return
	}
	t := now.Unix()
	i := t % windowSeconds
	w.mu.Lock()
	if w.sec[i] != t {
		w.sec[i], w.n[i], w.failed[i] = t, 0, 0
	}
	w.n[i] += n
	w.failed[i] += failed
	w.mu.Unlock()
}

// counts are the responses judged in the last minute and the failed ones
// among them.
func (w *window) counts(now time.Time) (n, failed int64) {
	t := now.Unix()
	w.mu.Lock()
	for i := range w.sec {
		if t-w.sec[i] < windowSeconds {
			n += w.n[i]
			failed += w.failed[i]
		}
	}
	w.mu.Unlock()
	return n, failed
}

// callWatch counts the judge calls outstanding and sees a judge that takes
// calls and answers none: the calls outstanding are stalled once none has
// finished for the stall time (since the last one finished, or since the
// first started after none was outstanding). A slow judge that keeps
// answering some calls is not stalled; one that hangs is, within the stall
// time, long before the judge timeout ends its calls. It is safe for
// concurrent use.
type callWatch struct {
	mu          sync.Mutex
	outstanding int64
	quietSince  time.Time
}

func (c *callWatch) start(now time.Time) {
	c.mu.Lock()
	if c.outstanding == 0 {
		c.quietSince = now
	}
	c.outstanding++
	c.mu.Unlock()
}

func (c *callWatch) done(now time.Time) {
	c.mu.Lock()
	c.outstanding--
	c.quietSince = now
	c.mu.Unlock()
}

// stalled is the number of calls outstanding when none has finished for
// after, else 0.
func (c *callWatch) stalled(now time.Time, after time.Duration) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outstanding > 0 && now.Sub(c.quietSince) >= after {
		return c.outstanding
	}
	return 0
}

// judgeHealth is the judge's recent record: the last minute's judgments
// with the stalled calls counted as failed ones.
type judgeHealth struct {
	judged, failed, stalled int64
}

// ratio is the failed fraction; 0 when nothing was judged.
func (h judgeHealth) ratio() float64 {
	if h.judged == 0 {
		return 0
	}
	return float64(h.failed) / float64(h.judged)
}

type requestKey struct {
	endpoint string
	code     int
}

type itemKey struct {
	scheme, outcome string // outcome: ok, judge_failed, error
}

func newServerMetrics() *serverMetrics {
	m := &serverMetrics{requests: map[requestKey]int64{}, latency: map[string]*promtext.Histogram{}, items: map[itemKey]int64{}}
	for _, e := range endpoints {
		m.latency[e] = promtext.NewHistogram(promtext.LatencyBuckets)
	}
	return m
}

func (m *serverMetrics) request(endpoint string, code int, seconds float64) {
	m.mu.Lock()
	m.requests[requestKey{endpoint, code}]++
	m.mu.Unlock()
	m.latency[endpoint].Observe(seconds)
}

func (m *serverMetrics) results(rs []reward.Result) {
	judged, failed := judgeFailures(rs)
	m.judged.add(time.Now(), judged, failed)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		outcome := "ok"
		switch {
		case r.Error != "":
			outcome = "error"
		case r.Empty:
			outcome = "empty"
		case !r.JudgeOK:
			outcome = "judge_failed"
		}
		m.items[itemKey{r.Scheme, outcome}]++
	}
}

// write renders every metric in the Prometheus text exposition format.
func (m *serverMetrics) write(w io.Writer, records int, j *judge.Judge, meter *llm.Meter, b breakerStatus, jh judgeHealth) {
	m.mu.Lock()
	reqs := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		reqs = append(reqs, k)
	}
	slices.SortFunc(reqs, func(a, b requestKey) int {
		if a.endpoint != b.endpoint {
			return strings.Compare(a.endpoint, b.endpoint)
		}
		return a.code - b.code
	})
	counts := make([]int64, len(reqs))
	for i, k := range reqs {
		counts[i] = m.requests[k]
	}
	items := make([]itemKey, 0, len(m.items))
	for k := range m.items {
		items = append(items, k)
	}
	slices.SortFunc(items, func(a, b itemKey) int { return strings.Compare(a.scheme+" "+a.outcome, b.scheme+" "+b.outcome) })
	itemCounts := make([]int64, len(items))
	for i, k := range items {
		itemCounts[i] = m.items[k]
	}
	m.mu.Unlock()

	help(w, "rewardd_requests_total", "counter", "HTTP requests by endpoint and status code.")
	for i, k := range reqs {
		fmt.Fprintf(w, "rewardd_requests_total{endpoint=%q,code=\"%d\"} %d\n", k.endpoint, k.code, counts[i])
	}
	help(w, "rewardd_request_duration_seconds", "histogram", "Time from a request's arrival to its response, by endpoint.")
	for _, e := range endpoints {
		m.latency[e].Write(w, "rewardd_request_duration_seconds", fmt.Sprintf("endpoint=%q", e))
	}
	help(w, "rewardd_requests_in_flight", "gauge", "Requests admitted and not yet answered.")
	fmt.Fprintf(w, "rewardd_requests_in_flight %d\n", m.inflight.Load())
	help(w, "rewardd_results_total", "counter", "Scored responses by scheme and outcome (ok, judge_failed, empty: not judged and paid the floor, error).")
	for i, k := range items {
		fmt.Fprintf(w, "rewardd_results_total{scheme=%q,outcome=%q} %d\n", k.scheme, k.outcome, itemCounts[i])
	}
	help(w, "rewardd_judge_failure_ratio", "gauge", "Judged responses whose judgment failed (judge_ok false), as a fraction of those judged in the last minute, the stalled judge calls counted as failed; 0 when none was.")
	fmt.Fprintf(w, "rewardd_judge_failure_ratio %s\n", promtext.FormatFloat(jh.ratio()))
	help(w, "rewardd_judge_calls_stalled", "gauge", "Judge calls outstanding while none has finished for --judge-stall-after (a hung judge); 0 otherwise.")
	fmt.Fprintf(w, "rewardd_judge_calls_stalled %d\n", jh.stalled)
	help(w, "rewardd_judge_breaker_state", "gauge", "1 for the circuit breaker's state in front of the judge: closed (calls go to the judge), open (the judge is down; answers take the failure policy at once), fatal (the judge refuses rewardd).")
	for _, st := range []string{breakerClosed, breakerOpen, breakerFatal} {
		fmt.Fprintf(w, "rewardd_judge_breaker_state{state=%q} %d\n", st, int(b2f(b.State == st)))
	}
	help(w, "rewardd_judge_breaker_opened_total", "counter", "Times the circuit breaker opened.")
	fmt.Fprintf(w, "rewardd_judge_breaker_opened_total %d\n", b.Opened)
	help(w, "rewardd_corpus_records", "gauge", "Problems in the loaded corpus index.")
	fmt.Fprintf(w, "rewardd_corpus_records %d\n", records)
	if j != nil {
		st := j.Stats()
		help(w, "rewardd_judge_calls_total", "counter", "Satisfaction verdicts computed through the judge endpoint or its response cache (with --judge-panel: the panel's verdicts; each judge's calls are rewardd_panel_judge_calls_total).")
		fmt.Fprintf(w, "rewardd_judge_calls_total %d\n", st.Calls)
		help(w, "rewardd_judge_cache_hits_total", "counter", "Verdicts served from the in-memory cache (memory) and judge responses served from the response cache file (disk).")
		fmt.Fprintf(w, "rewardd_judge_cache_hits_total{cache=\"memory\"} %d\n", st.MemHits)
		fmt.Fprintf(w, "rewardd_judge_cache_hits_total{cache=\"disk\"} %d\n", st.DiskHits)
		help(w, "rewardd_judge_failures_total", "counter", "Verdict calls that ended without usable verdicts (judge_ok false); with --judge-panel, those in which every judge failed.")
		fmt.Fprintf(w, "rewardd_judge_failures_total %d\n", st.Failures)
		help(w, "rewardd_judge_passages_cut_total", "counter", "Grounded judge calls whose passage was longer than --judge-passage-tokens and was cut to it.")
		fmt.Fprintf(w, "rewardd_judge_passages_cut_total %d\n", st.PassagesCut)
		help(w, "rewardd_judge_cached_verdicts", "gauge", "Verdicts held in the in-memory cache.")
		fmt.Fprintf(w, "rewardd_judge_cached_verdicts %d\n", st.Cached)
		help(w, "rewardd_judge_duration_seconds", "histogram", "Time of one verdict call, repairs and retries included.")
		j.Latency().Write(w, "rewardd_judge_duration_seconds", "")
		writePanelMetrics(w, j.Members())
	}
	if meter != nil {
		t := meter.Snapshot().Total
		help(w, "rewardd_judge_tokens_total", "counter", "Tokens the judge endpoint reported, by kind.")
		fmt.Fprintf(w, "rewardd_judge_tokens_total{kind=\"prompt\"} %d\n", t.PromptTokens)
		fmt.Fprintf(w, "rewardd_judge_tokens_total{kind=\"completion\"} %d\n", t.CompletionTokens)
		help(w, "rewardd_judge_requests_total", "counter", "Live requests sent to the judge endpoint (retries not counted).")
		fmt.Fprintf(w, "rewardd_judge_requests_total %d\n", t.Requests)
	}
}

// writePanelMetrics writes each panel judge's counters (nothing for a
// single judge, whose counters are the rewardd_judge_* above).
func writePanelMetrics(w io.Writer, members []*judge.Judge) {
	if len(members) == 0 {
		return
	}
	stats := make([]judge.JudgeStats, len(members))
	for i, m := range members {
		stats[i] = m.Stats()
	}
	help(w, "rewardd_panel_judge_calls_total", "counter", "Verdict calls of each judge of the --judge-panel, through its endpoint or the response cache.")
	for i, m := range members {
		fmt.Fprintf(w, "rewardd_panel_judge_calls_total{judge=%q} %d\n", m.Name(), stats[i].Calls)
	}
	help(w, "rewardd_panel_judge_failures_total", "counter", "Verdict calls of each panel judge that ended without usable verdicts; each counted as a vote against the response.")
	for i, m := range members {
		fmt.Fprintf(w, "rewardd_panel_judge_failures_total{judge=%q} %d\n", m.Name(), stats[i].Failures)
	}
	help(w, "rewardd_panel_judge_cache_hits_total", "counter", "Each panel judge's verdicts served from memory and responses served from the response cache file.")
	for i, m := range members {
		fmt.Fprintf(w, "rewardd_panel_judge_cache_hits_total{judge=%q,cache=\"memory\"} %d\n", m.Name(), stats[i].MemHits)
		fmt.Fprintf(w, "rewardd_panel_judge_cache_hits_total{judge=%q,cache=\"disk\"} %d\n", m.Name(), stats[i].DiskHits)
	}
}

// judgeFailures counts the results that went to the judge (those without
// an error) and those among them whose judgment failed.
func judgeFailures(rs []reward.Result) (judged, failed int64) {
	for _, r := range rs {
		if r.Error != "" || r.Empty {
			continue // not judged: not scored, or nothing to judge
		}
		judged++
		if !r.JudgeOK {
			failed++
		}
	}
	return judged, failed
}

func help(w io.Writer, name, typ, text string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, typ)
}

// b2f is 1 for true and 0 for false, a boolean as a metric's value.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
