package plan

import (
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/pipeline"

	"container/heap"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
)

// Sample is the problems of a distill plan's pilot: the n problems whose
// xxhash64(id) is lowest. The hash spreads them over the input's sources
// and order, and the choice depends only on the ids, so a plan run again
// picks the same problems. The engine's feeder applies it with the
// partition (the pilot is the run's pipeline.Pilot), so a partitioned
// worker samples its own share. A nil Sample holds every problem.
type Sample struct{ ids map[string]struct{} }

// Holds reports whether problem id is in the sample.
func (s *Sample) Holds(id string) bool {
	if s == nil {
		return true
	}
	_, ok := s.ids[id]
	return ok
}

// Len is the number of problems in the sample.
func (s *Sample) Len() int { return len(s.ids) }

// lowestHashes keeps the n ids with the lowest hashes seen so far.
type lowestHashes struct {
	n     int
	items hashHeap
}

type hashedID struct {
	hash uint64
	id   string
}

// hashHeap is a max-heap on hash, so the largest kept hash goes first.
type hashHeap []hashedID

func (h hashHeap) Len() int           { return len(h) }
func (h hashHeap) Less(i, j int) bool { return h[i].hash > h[j].hash }
func (h hashHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hashHeap) Push(x any)        { *h = append(*h, x.(hashedID)) }
func (h *hashHeap) Pop() any          { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

func (l *lowestHashes) offer(id string) {
	h := xxhash.Sum64String("plan\x00" + id) // not the partition's hash: a worker's ids all share it mod K
	switch {
	case len(l.items) < l.n:
		heap.Push(&l.items, hashedID{h, id})
	case h < l.items[0].hash:
		l.items[0] = hashedID{h, id}
		heap.Fix(&l.items, 0)
	}
}

func (l *lowestHashes) sample() *Sample {
	s := &Sample{ids: make(map[string]struct{}, len(l.items))}
	for _, it := range l.items {
		s.ids[it.id] = struct{}{}
	}
	return s
}

// pilot measures the sampled problems of a plan while pipeline.Run
// processes them: it is the run's pipeline.Pilot.
type pilot struct {
	sample *Sample
	mu     sync.Mutex
	open   map[string]*pilotTimes // by problem id, from Start to End
	done   []corpus.PilotProblem
}

// pilotTimes are the requests of one problem as the transport saw them.
type pilotTimes struct {
	mu    sync.Mutex
	spans [][2]time.Time
	byURL map[string]float64
}

type pilotKey struct{}

func newPilot(s *Sample) *pilot { return &pilot{sample: s, open: map[string]*pilotTimes{}} }

// Holds reports whether problem id is in the sample.
func (p *pilot) Holds(id string) bool { return p.sample.Holds(id) }

// Len is the number of problems in the sample.
func (p *pilot) Len() int { return p.sample.Len() }

// Start tags ctx with problem id, so the transport can charge its requests'
// time to it.
func (p *pilot) Start(ctx context.Context, id string) context.Context {
	t := &pilotTimes{byURL: map[string]float64{}}
	p.mu.Lock()
	p.open[id] = t
	p.mu.Unlock()
	return context.WithValue(ctx, pilotKey{}, t)
}

// End keeps the figures of a problem that ended as a record, a failure or
// left out; one that the run's end left pending is dropped.
func (p *pilot) End(e pipeline.ProblemEnd) {
	p.mu.Lock()
	t := p.open[e.ID]
	delete(p.open, e.ID)
	p.mu.Unlock()
	if t == nil || e.Pending {
		return
	}
	pp := corpus.PilotProblem{ID: e.ID, Source: e.Source, Stages: e.Stages}
	switch {
	case e.Record != nil:
		pp.Outcome = corpus.OutcomeRecord
		pp.CountItems(e.Record)
	case job.LeftOutStage(e.FailedStage):
		pp.Outcome = corpus.OutcomeLeftOut
	default:
		pp.Outcome = corpus.OutcomeFailed
	}
	t.mu.Lock()
	pp.Seconds = unionSeconds(t.spans)
	pp.RequestSeconds = t.byURL
	t.mu.Unlock()
	p.mu.Lock()
	p.done = append(p.done, pp)
	p.mu.Unlock()
}

func (p *pilot) problems() []corpus.PilotProblem {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.done)
}

// unionSeconds is the length of the union of the spans.
func unionSeconds(spans [][2]time.Time) float64 {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, sp := range s {
		switch {
		case i == 0:
			cur = sp
		case sp[0].After(cur[1]):
			total += cur[1].Sub(cur[0])
			cur = sp
		case sp[1].After(cur[1]):
			cur[1] = sp[1]
		}
	}
	if len(s) > 0 {
		total += cur[1].Sub(cur[0])
	}
	return total.Seconds()
}

// timing is an http.RoundTripper that charges each request's time to the
// problem its context names, by endpoint. A non-streaming completion's
// headers come when the generation ends, so the round trip is the
// request's latency.
type timing struct {
	next      http.RoundTripper
	endpoints []string // base URLs, longest first
}

func (t timing) RoundTrip(req *http.Request) (*http.Response, error) {
	pt, _ := req.Context().Value(pilotKey{}).(*pilotTimes)
	begin := time.Now()
	resp, err := t.next.RoundTrip(req)
	if pt != nil {
		end := time.Now()
		url := req.URL.String()
		ep := url
		for _, e := range t.endpoints {
			if strings.HasPrefix(url, strings.TrimRight(e, "/")) {
				ep = e
				break
			}
		}
		pt.mu.Lock()
		pt.spans = append(pt.spans, [2]time.Time{begin, end})
		pt.byURL[ep] += end.Sub(begin).Seconds()
		pt.mu.Unlock()
	}
	return resp, err
}

// timedClient is the HTTP client of a plan's pilot: the run's own, or the
// one llm would make, with every request timed.
func timedClient(j *job.Job, c *http.Client) *http.Client {
	var next http.RoundTripper
	if c == nil {
		next = llm.NewTransport(j.Limits.Concurrency)
	} else if next = c.Transport; next == nil {
		next = http.DefaultTransport
	}
	var eps []string
	for _, e := range j.Endpoints() {
		if !slices.Contains(eps, e.BaseURL) {
			eps = append(eps, e.BaseURL)
		}
	}
	slices.SortFunc(eps, func(a, b string) int { return len(b) - len(a) })
	out := &http.Client{Transport: timing{next: next, endpoints: eps}}
	if c != nil {
		out.Timeout, out.Jar, out.CheckRedirect = c.Timeout, c.Jar, c.CheckRedirect
	}
	return out
}
