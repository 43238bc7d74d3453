package judge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/internal/promtext"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// JudgeStage is the accounting stage of the satisfaction judge's requests.
const JudgeStage = "satisfy"

// Options configure the satisfaction judge.
type Options struct {
	Model string // the judge model, sent with every request
	// Name is how a panel's metrics and errors call the judge (default:
	// Model); see NewPanel.
	Name string
	// EndpointKind is the kind of server the client talks to
	// (llm.EndpointKind; default llm.KindGeneric), and Seed the sampling
	// seed sent with every request (nil: none). Both are in every
	// verdict's keys, in memory and in the llm response cache.
	EndpointKind string
	Seed         *int64
	// Temperature and TopP are the judge's sampling (Temperature nil: 0;
	// TopP nil: the server's default).
	Temperature, TopP *float64
	Repairs           int // repair turns after an unparsable reply (default 2; -1 for none)
	// GroundedRepairs are the grounded judge's repair turns (default 0:
	// seed 001 gives an invalid output the conservative zero, no repair).
	GroundedRepairs int
	Concurrency     int // verdict calls at once (default 64)
	MaxTokens       int // 0: the server's default
	// CacheEntries bounds the in-memory cache of parsed verdicts (default
	// 100,000 responses; -1 for none). The llm response cache, when the
	// client has one, keeps every answered request on disk as well.
	CacheEntries int
	// PassageTokens is the grounded judge's passage budget in estimated
	// tokens (prompts.FitPassage): a longer passage is cut to it (default
	// prompts.DefaultJudgePassageTokens; -1 for none).
	PassageTokens int
	// Layout is the judge templates' layout (default prompts.LayoutCache:
	// the response last, so a server's prefix cache reuses the rest).
	Layout prompts.Layout
	// MaxResponseTokens is the response budget in estimated tokens: a
	// longer response is shown head and tail (prompts.View), and every
	// PITFALL counts as fallen into in it, since its hidden middle may hold
	// it (default prompts.DefaultJudgeMaxResponseTokens; -1 for none).
	MaxResponseTokens int
}

// Judge asks the satisfaction judge which rubric items a response satisfies
// and at which step. It renders the satisfy template (the contract of seed
// 000 appendix 7.4: the items with ids and types, the response with its
// numbered steps, the extracted answer), calls the endpoint through
// llm.Client.ChatParsed (at temperature 0 unless set), parses the reply with
// schema.ParseSatisfaction, and shows an unparsable reply back to the model
// with the parser's error up to Repairs times.
//
// Verdicts are cached twice: by the llm response cache (its key covers the
// model, the messages, which embed the rubric and the response, the
// sampling settings and seed, and the request's scope: the endpoint kind
// and the template's hash), and in memory as parsed verdicts keyed by the
// same judge settings (model, endpoint kind, template hashes, token limit,
// seed), the question, the items and the response; a request for a
// verdict already being computed waits for it. A Judge made by NewPanel
// asks its members instead (see NewPanel). Judge is safe for concurrent
// use.
type Judge struct {
	client  *llm.Client
	prompts *prompts.Set
	opt     Options
	salt    string // model and template hashes: what else decides a verdict
	sem     chan struct{}

	// groundedSalt is salt's counterpart for the grounded judge's scores,
	// groupSalt and groundedGroupSalt for group judging's (GroupVerdicts,
	// GroundedGroupScores).
	groundedSalt, groupSalt, groundedGroupSalt string
	// members are a panel's judges (NewPanel); nil for one judge.
	members []*Judge
	// guard stands before the calls to the endpoint (SetGuard);
	// memberDeadline is a panel's (SetMemberDeadline).
	guard          Guard
	memberDeadline time.Duration

	sat      memo[[]schema.Satisfaction]
	grounded memo[schema.GroundedScores]
	// warm holds the rubrics (their keys before the response) whose
	// judge replies said the server's prefix cache reused part of the
	// prompt (see Warm).
	warm warmSet

	calls, memHits, diskHits, failures atomic.Int64
	passagesCut, responsesCut          atomic.Int64
	latency                            *promtext.Histogram
}

// memo holds parsed judge answers of one kind: a bounded cache, and the
// computations in flight that other requests for the same key wait for.
type memo[V any] struct {
	mu     sync.Mutex
	cache  verdictCache[V]
	flight map[uint64]*flight[V]
}

func newMemo[V any](entries int) memo[V] {
	return memo[V]{cache: newVerdictCache[V](entries), flight: map[uint64]*flight[V]{}}
}

// flight is one verdict computation others may wait for.
type flight[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// New returns a judge that sends its requests through client.
func New(client *llm.Client, ps *prompts.Set, opt Options) (*Judge, error) {
	switch {
	case client == nil || ps == nil:
		return nil, errors.New("judge: the judge needs an llm client and prompt templates")
	case opt.Model == "":
		return nil, errors.New("judge: the judge needs a model name")
	}
	if opt.Repairs == 0 {
		opt.Repairs = 2
	}
	opt.Repairs = max(opt.Repairs, 0)
	opt.GroundedRepairs = max(opt.GroundedRepairs, 0)
	if opt.Concurrency <= 0 {
		opt.Concurrency = 64
	}
	if opt.PassageTokens == 0 {
		opt.PassageTokens = prompts.DefaultJudgePassageTokens
	}
	if opt.MaxResponseTokens == 0 {
		opt.MaxResponseTokens = prompts.DefaultJudgeMaxResponseTokens
	}
	layout, err := prompts.ParseLayout(string(opt.Layout))
	if err != nil {
		return nil, fmt.Errorf("reward: the judge's layout: %w", err)
	}
	opt.Layout = layout
	if opt.CacheEntries == 0 {
		opt.CacheEntries = 100_000
	}
	if opt.Name == "" {
		opt.Name = opt.Model
	}
	if opt.EndpointKind == "" {
		opt.EndpointKind = llm.KindGeneric
	}
	if opt.Temperature == nil {
		zero := 0.0
		opt.Temperature = &zero
	}
	return &Judge{
		client: client, prompts: ps, opt: opt,
		salt:              judgeSalt(opt, ps, opt.Layout.Of(prompts.Satisfy)),
		groundedSalt:      judgeSalt(opt, ps, opt.Layout.Of(prompts.ScoreGrounded)),
		groupSalt:         judgeSalt(opt, ps, prompts.SatisfyGroup),
		groundedGroupSalt: judgeSalt(opt, ps, prompts.ScoreGroundedGroup),
		sem:               make(chan struct{}, opt.Concurrency),
		sat:               newMemo[[]schema.Satisfaction](opt.CacheEntries),
		warm:              newWarmSet(opt.CacheEntries),
		grounded:          newMemo[schema.GroundedScores](opt.CacheEntries),
		latency:           promtext.NewHistogram(promtext.LatencyBuckets),
	}, nil
}

// judgeSalt is what decides a judge's verdicts besides the question, the
// rubric and the response: the model, the endpoint kind, the hashes of the
// template (its layout's) and of the repair template, the token limit, the
// seed, the sampling and the response budget. It starts every in-memory
// key.
func judgeSalt(opt Options, ps *prompts.Set, template string) string {
	seed := "none"
	if opt.Seed != nil {
		seed = strconv.FormatInt(*opt.Seed, 10)
	}
	return strings.Join([]string{opt.Model, opt.EndpointKind, ps.Hash(template), ps.Hash(prompts.Repair), strconv.Itoa(opt.MaxTokens), seed,
		optFloat(opt.Temperature), optFloat(opt.TopP), string(opt.Layout), strconv.Itoa(opt.MaxResponseTokens)}, "\x00")
}

func optFloat(f *float64) string {
	if f == nil {
		return "default"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// request is the judge's request for msgs rendered from template: the
// judge's model with its sampling, token limit and seed, scoped to its
// endpoint kind and the template's hash.
func (j *Judge) request(stage, template string, msgs []llm.Message) llm.Request {
	return llm.Request{Stage: stage, Model: j.opt.Model, Messages: msgs, Temperature: j.opt.Temperature, TopP: j.opt.TopP, MaxTokens: j.opt.MaxTokens, Seed: j.opt.Seed,
		Scope: llm.Scope{EndpointKind: j.opt.EndpointKind, Template: j.prompts.Hash(template)}}
}

// JudgeStats count the judge's work since it was made.
type JudgeStats struct {
	Calls    int64 // verdicts computed through the endpoint (or its response cache)
	MemHits  int64 // verdicts served from the in-memory cache
	DiskHits int64 // responses served from the llm response cache
	Failures int64 // verdict calls that ended without usable verdicts
	Cached   int   // verdicts held in memory now
	// PassagesCut counts grounded judge calls whose passage was cut to
	// Options.PassageTokens.
	PassagesCut int64
	// ResponsesCut counts judge calls whose response was over
	// Options.MaxResponseTokens and shown head and tail.
	ResponsesCut int64
}

// Stats returns the judge's counters.
func (j *Judge) Stats() JudgeStats {
	if j.members != nil {
		return j.panelStats()
	}
	cached := j.sat.len() + j.grounded.len()
	return JudgeStats{Calls: j.calls.Load(), MemHits: j.memHits.Load(), DiskHits: j.diskHits.Load(), Failures: j.failures.Load(), Cached: cached,
		PassagesCut: j.passagesCut.Load(), ResponsesCut: j.responsesCut.Load()}
}

// Latency is the histogram of the judge's verdict calls' durations in
// seconds, repairs and retries included, for rewardd's metrics.
func (j *Judge) Latency() *promtext.Histogram { return j.latency }

// RubricHash is the part of a verdict's memory key that a question and its
// items make (for a panel, each member's); see Judge.RubricKey.
type RubricHash struct {
	d       xxhash.Digest
	members []xxhash.Digest
	items   []schema.Item
}

// RubricKey is the part of a verdict's memory key that a question and its
// items make: hashed once, it completes to the key of each response with
// CachedUnder, for a caller that asks about many responses to one rubric.
func (j *Judge) RubricKey(question string, items []schema.Item) RubricHash {
	if j.members == nil {
		return RubricHash{d: j.rubricKey(question, items)}
	}
	h := RubricHash{members: make([]xxhash.Digest, len(j.members)), items: items}
	for i, m := range j.members {
		h.members[i] = m.rubricKey(question, items)
	}
	return h
}

// CachedUnder is Cached for a rubric hashed with RubricKey. A panel's
// verdicts are in memory when every member's are.
func (j *Judge) CachedUnder(rubric RubricHash, response string) ([]schema.Satisfaction, bool) {
	if j.members == nil {
		return j.cached(responseKey(rubric.d, response))
	}
	answers := make([]memberVerdicts, len(j.members))
	for i, m := range j.members {
		v, ok := m.sat.peek(responseKey(rubric.members[i], response))
		if !ok {
			return nil, false
		}
		answers[i] = memberVerdicts{v: v}
	}
	for _, m := range j.members {
		m.memHits.Add(1)
	}
	return panelSatisfaction(rubric.items, answers), true
}

// Cached returns the verdicts on r held in memory, without calling the
// endpoint.
func (j *Judge) Cached(question string, items []schema.Item, r *reward.Rollout) ([]schema.Satisfaction, bool) {
	return j.CachedUnder(j.RubricKey(question, items), r.Response)
}

// cached returns the verdicts held in memory under key.
func (j *Judge) cached(key uint64) ([]schema.Satisfaction, bool) {
	return j.sat.cached(key, &j.memHits)
}

// cached returns the value held under key, counting a hit in hits.
func (m *memo[V]) cached(key uint64, hits *atomic.Int64) (V, bool) {
	v, ok := m.peek(key)
	if ok {
		hits.Add(1)
	}
	return v, ok
}

// peek returns the value held under key, counting no hit.
func (m *memo[V]) peek(key uint64) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cache.get(key)
}

// store caches v under key.
func (m *memo[V]) store(key uint64, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cache.put(key, v)
}

func (m *memo[V]) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cache.len()
}

// Verdicts judges r against items (one verdict per item, in item order). An
// error says why there are no verdicts: the endpoint failed, the reply did
// not parse after every repair, or ctx ended.
func (j *Judge) Verdicts(ctx context.Context, question string, items []schema.Item, r *reward.Rollout) ([]schema.Satisfaction, error) {
	if j.members != nil {
		return j.panelVerdicts(ctx, question, items, r)
	}
	key := j.key(question, items, r.Response)
	return j.sat.do(ctx, key, &j.memHits, func() ([]schema.Satisfaction, error) { return j.call(ctx, question, items, r) })
}

// do returns the value under key: from the cache, from a computation of it
// already in flight, or from compute, whose success is cached. A hit or a
// wait that ends in a value counts in hits.
func (m *memo[V]) do(ctx context.Context, key uint64, hits *atomic.Int64, compute func() (V, error)) (V, error) {
	var zero V
	for {
		m.mu.Lock()
		if v, ok := m.cache.get(key); ok {
			m.mu.Unlock()
			hits.Add(1)
			return v, nil
		}
		if f, busy := m.flight[key]; busy {
			m.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return zero, fmt.Errorf("waiting for the judge: %w", context.Cause(ctx))
			}
			if f.err == nil {
				hits.Add(1)
				return f.val, nil
			}
			if !errors.Is(f.err, errLeaderGone) {
				return zero, f.err
			}
			continue // the caller computing it went away: compute it here
		}
		f := &flight[V]{done: make(chan struct{})}
		m.flight[key] = f
		m.mu.Unlock()

		f.val, f.err = compute()
		m.mu.Lock()
		delete(m.flight, key)
		if f.err == nil {
			m.cache.put(key, f.val)
		}
		m.mu.Unlock()
		if f.err != nil && ctx.Err() != nil {
			err := f.err
			f.err = errLeaderGone
			close(f.done)
			return zero, err
		}
		close(f.done)
		return f.val, f.err
	}
}

var errLeaderGone = errors.New("the request computing this verdict ended")

func (j *Judge) call(ctx context.Context, question string, items []schema.Item, r *reward.Rollout) ([]schema.Satisfaction, error) {
	var verdicts []schema.Satisfaction
	err := j.guarded(ctx, func() error {
		return j.slot(ctx, func() (err error) {
			verdicts, err = j.ask(ctx, question, items, r)
			return err
		})
	})
	return verdicts, err
}

// slot runs ask in one of the judge's concurrency slots, counting the call,
// its latency and its failure.
func (j *Judge) slot(ctx context.Context, ask func() error) error {
	select {
	case j.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for a judge slot: %w", context.Cause(ctx))
	}
	defer func() { <-j.sem }()
	start := time.Now()
	j.calls.Add(1)
	err := ask()
	j.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		j.failures.Add(1)
	}
	return err
}

func (j *Judge) ask(ctx context.Context, question string, items []schema.Item, r *reward.Rollout) ([]schema.Satisfaction, error) {
	msgs, shown, err := j.prompts.SatisfyView(j.view(), question, r.Response, r.Extracted, items)
	if err != nil {
		return nil, err
	}
	if shown.Cut {
		j.responsesCut.Add(1)
	}
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	req := j.request(JudgeStage, j.opt.Layout.Of(prompts.Satisfy), msgs)
	var verdicts []schema.Satisfaction
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What:    "satisfaction verdicts",
		Repairs: j.opt.Repairs,
		Parse: func(reply string) error {
			v, err := schema.ParseSatisfactionOf(reply, r.Response, ids, len(r.Steps))
			verdicts = v
			return err
		},
		Repair: j.prompts.RepairMessages,
		OnResponse: func(resp *llm.Response) {
			if resp.Cached {
				j.diskHits.Add(1)
			}
			j.warm.note(resp, func() uint64 { return sum64(j.rubricKey(question, items)) })
		},
	})
	if err != nil {
		return nil, err
	}
	return unseenPitfalls(verdicts, items, shown, r.Steps), nil
}

// view is how the judge's prompts show a response.
func (j *Judge) view() prompts.View {
	return prompts.View{Layout: j.opt.Layout, MaxResponseTokens: j.opt.MaxResponseTokens}
}

// key identifies a verdict: the judge model and templates, the question,
// the items and the response (the extracted answer and the step count are
// functions of the response).
func (j *Judge) key(question string, items []schema.Item, response string) uint64 {
	return responseKey(j.rubricKey(question, items), response)
}

// rubricKey is the key's hash before the response: the same for every
// response to one problem.
func (j *Judge) rubricKey(question string, items []schema.Item) xxhash.Digest {
	var d xxhash.Digest
	d.Reset()
	hashString(&d, j.salt)
	hashString(&d, question)
	for _, it := range items {
		hashInt(&d, uint64(it.ID))
		hashString(&d, it.Type)
		hashString(&d, it.Text)
	}
	return d
}

// responseKey completes a rubric key (a copy of it) with the response.
func responseKey(rubric xxhash.Digest, response string) uint64 {
	hashString(&rubric, response)
	return rubric.Sum64()
}

// hashString hashes s with its length first, so that no two sequences of
// strings hash the same bytes.
func hashString(d *xxhash.Digest, s string) {
	hashInt(d, uint64(len(s)))
	_, _ = d.WriteString(s)
}

func hashInt(d *xxhash.Digest, n uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	_, _ = d.Write(b[:])
}

// verdictCache is a bounded cache of parsed verdicts with two generations:
// when the current one is full it becomes the old one and the oldest is
// dropped, so at most 2×half entries are held and a hit in the old
// generation is moved back. The caller holds the memo's lock.
type verdictCache[V any] struct {
	half     int
	cur, old map[uint64]V
}

func newVerdictCache[V any](entries int) verdictCache[V] {
	if entries < 0 {
		return verdictCache[V]{}
	}
	half := max(1, entries/2)
	return verdictCache[V]{half: half, cur: make(map[uint64]V)}
}

func (c *verdictCache[V]) get(k uint64) (V, bool) {
	var zero V
	if c.half == 0 {
		return zero, false
	}
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	if v, ok := c.old[k]; ok {
		c.put(k, v)
		return v, true
	}
	return zero, false
}

func (c *verdictCache[V]) put(k uint64, v V) {
	if c.half == 0 {
		return
	}
	if len(c.cur) >= c.half {
		c.old, c.cur = c.cur, make(map[uint64]V, c.half)
	}
	c.cur[k] = v
}

func (c *verdictCache[V]) len() int { return len(c.cur) + len(c.old) }
