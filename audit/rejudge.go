package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// RejudgeConfig says which judge re-runs validity judging, on what sample,
// at what cost. The API key comes from the caller (read from the
// environment); it never reaches the report, logs or errors.
type RejudgeConfig struct {
	BaseURL, APIKey, Model string
	// Sample items are drawn with Seed among the items with a stored verdict.
	Sample int
	Seed   uint64
	// CachePath is the response cache file; "" sends every request.
	CachePath string
	// Prices of the model in USD per million tokens; MaxCostUSD > 0 stops
	// before the next live request once that much is spent.
	Price      llm.Price
	MaxCostUSD float64
	// Judging: the judge_batch template (PromptsDir overrides it),
	// sampling temperature, token limit, repair turns.
	PromptsDir      string
	Temperature     float64
	MaxTokens       int
	Repairs         int
	LegacyMaxTokens bool
	// JudgeSeed is the sampling seed sent with every judge request (nil:
	// none); EndpointKind the server's kind, "" for the default of BaseURL
	// (llm.EndpointKind). Both are in the requests' cache keys.
	JudgeSeed    *int64
	EndpointKind string
	// Limits: records judged at once (one request each; default
	// DefaultConcurrency), per-attempt timeout and attempts for retryable
	// errors, and the retry backoff's base and cap (the cap also bounds
	// a server's Retry-After) (zero: llm's defaults).
	Concurrency             int
	AttemptTimeout          time.Duration
	MaxAttempts             int
	BackoffBase, BackoffMax time.Duration
	HTTPClient              *http.Client // nil: llm's own
	Logger                  *slog.Logger
	Tool                    string
}

// StageRejudge is the meter's stage name for rejudge requests.
const StageRejudge = "rejudge"

// DefaultConcurrency is how many records a rejudge judges at once.
const DefaultConcurrency = 16

// Rejudge draws a reproducible sample of judged items from in, asks another
// judge about them through llm (cache, retries, rate control, cost
// accounting, budget stop) with the pipeline's judge_batch prompt (one
// request per record, holding that record's drawn items), and reports its
// agreement with the stored verdicts. Items the judge could not answer are
// counted as failed. The error is for what stops the whole rejudge: bad
// configuration, a fatal endpoint error (wrong key, model or URL), an
// endpoint where nothing answers (llm.Streak, the rule distill run keeps),
// a cancelled context. When ctx is cancelled the report comes with the
// error, its figures over the items judged before (Sample.Stopped says so).
func Rejudge(ctx context.Context, in *Input, cfg RejudgeConfig) (*AgreementReport, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	set, err := prompts.Load(cfg.PromptsDir)
	if err != nil {
		return nil, err
	}
	items, eligible, problems, err := Sample(ctx, in, cfg.Sample, cfg.Seed, true)
	if err != nil {
		return nil, err
	}
	rep := newAgreementReport(in, "judge "+cfg.Model)
	rep.Tool = cfg.Tool
	rep.InputProblems = append(rep.InputProblems, problems...)
	rep.Judge = &JudgeInfo{BaseURL: redactedURL(cfg.BaseURL), Model: cfg.Model, Template: set.Hash(prompts.JudgeBatch)}
	groups := groupByRecord(items)
	rep.Sample = &SampleInfo{Seed: cfg.Seed, Requested: cfg.Sample, Eligible: eligible, Drawn: len(items), Records: len(groups)}
	if len(items) == 0 {
		rep.finish(nil)
		return rep, nil
	}
	client, meter, closeClient, err := newJudgeClient(cfg)
	if err != nil {
		return nil, err
	}
	defer closeClient()
	j := &rejudger{cfg: cfg, client: client, prompts: set, log: cfg.Logger, cost: meter.Cost}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	j.gate = llm.NewBudgetGate(meter)
	pairs, err := j.run(ctx, groups, rep.Sample)
	s := meter.Snapshot().Total
	rep.LLM = &LLMUsage{Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries, Failures: s.Failures, Repairs: s.Repairs,
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, CostUSD: s.CostUSD}
	if err != nil && !errors.Is(err, context.Canceled) {
		return rep, err
	}
	rep.finish(pairs) // when interrupted, over the items judged before
	return rep, err
}

// newJudgeClient makes the client, its cache and its meter.
func newJudgeClient(cfg RejudgeConfig) (*llm.Client, *llm.Meter, func(), error) {
	var cache *llm.Cache
	if cfg.CachePath != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.CachePath), 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("the response cache's directory: %w", err)
		}
		c, err := llm.OpenCache(cfg.CachePath)
		if err != nil {
			return nil, nil, nil, err
		}
		cache = c
	}
	meter := llm.NewMeter(map[string]llm.Price{cfg.Model: cfg.Price}, llm.Budget{MaxCostUSD: cfg.MaxCostUSD})
	client, err := llm.NewClient(llm.Endpoint{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey}, llm.Options{
		MaxInFlight: cfg.Concurrency, AttemptTimeout: cfg.AttemptTimeout, MaxAttempts: cfg.MaxAttempts,
		BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax,
		HTTPClient: cfg.HTTPClient, LegacyMaxTokens: cfg.LegacyMaxTokens, Logger: cfg.Logger,
	}, cache, meter)
	if err != nil {
		if cache != nil {
			cache.Close()
		}
		return nil, nil, nil, err
	}
	return client, meter, func() {
		client.Close()
		if cache != nil {
			cache.Close()
		}
	}, nil
}

func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// groupByRecord gathers drawn items by record, in the order of each
// record's first drawn item, items in rubric order.
func groupByRecord(items []SampleItem) [][]SampleItem {
	at := map[string]int{}
	var groups [][]SampleItem
	for _, it := range items {
		i, ok := at[it.RecordID]
		if !ok {
			i = len(groups)
			at[it.RecordID] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], it)
	}
	for _, g := range groups {
		slices.SortFunc(g, func(a, b SampleItem) int { return cmp.Compare(a.ItemID, b.ItemID) })
	}
	return groups
}

// rejudger judges groups of items, a bounded number at once.
type rejudger struct {
	cfg     RejudgeConfig
	client  *llm.Client
	prompts *prompts.Set
	log     *slog.Logger
	gate    *llm.BudgetGate // holds each request's estimated cost against the budget
	cost    func(model string, prompt, completion int64) float64

	mu                sync.Mutex
	streak            llm.Streak // records in a row whose request failed for the endpoint's sake
	completionPerItem int64      // the most completion tokens per item a reply has used
}

// run judges every group; it returns the judged pairs, in sample order.
// A budget stop or an interruption (ctx cancelled) ends it early, recorded
// in info, with the pairs judged before; a fatal error, or an endpoint
// where nothing answers, ends it with that error.
func (j *rejudger) run(parent context.Context, groups [][]SampleItem, info *SampleInfo) ([]verdictPair, error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	results := make([][]verdictPair, len(groups))
	failed := make([]error, len(groups))
	work := make(chan int)
	spent := make(chan struct{}) // closed at the budget stop: the requests in flight, reserved within it, finish
	var stopFeeding sync.Once
	var wg sync.WaitGroup
	for range max(1, min(j.cfg.Concurrency, len(groups))) {
		wg.Go(func() {
			for i := range work {
				results[i], failed[i] = j.judge(ctx, groups[i])
				if errors.Is(failed[i], llm.ErrBudgetExhausted) {
					stopFeeding.Do(func() { close(spent) })
				} else if stop := j.stopsAll(failed[i]); stop != nil {
					cancel(stop)
				}
			}
		})
	}
feed:
	for i := range groups {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		case <-spent:
			break feed
		}
	}
	close(work)
	wg.Wait()
	cause := context.Cause(ctx)
	switch {
	case parent.Err() != nil:
		info.Stopped = "interrupted: the figures are over the items judged before; answered requests are in the cache, so running again pays only for the rest"
	case cause != nil:
		return nil, cause
	case isClosed(spent):
		info.Stopped = NullString(fmt.Sprintf("the budget of $%g is spent, or the next request would pass it; items not judged are counted as failed (a second run with a higher --max-cost-usd answers the judged ones from the cache)", j.cfg.MaxCostUSD))
	}
	var pairs []verdictPair
	for i, g := range groups {
		if results[i] == nil {
			info.Failed += len(g)
			if err := failed[i]; err != nil && !errors.Is(err, llm.ErrBudgetExhausted) && llm.ClassOf(err) != llm.ClassCanceled {
				j.log.Warn("an item group could not be judged", "record", g[0].RecordID, "items", len(g), "err", failed[i])
			}
			continue
		}
		info.Judged += len(g)
		pairs = append(pairs, results[i]...)
	}
	if parent.Err() != nil {
		return pairs, context.Cause(parent)
	}
	return pairs, nil
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stopsAll says whether a group's error ends the whole rejudge, and with
// what: a fatal endpoint error (wrong key, model or URL), or the streak of failures distill run stops on (nothing listens, or the
// endpoint keeps failing). A reply that never parsed is the group's alone.
func (j *rejudger) stopsAll(err error) error {
	var le *llm.Error
	switch {
	case errors.Is(err, context.Canceled):
		return nil
	case errors.As(err, &le) && le.Class == llm.ClassFatal:
		return fmt.Errorf("rejudging: %w", err)
	}
	j.mu.Lock()
	verdict, n := j.streak.Observe(err), j.streak.Len()
	j.mu.Unlock()
	switch verdict {
	case llm.StreakUnreachable:
		return fmt.Errorf("nothing answers at %s: %d requests in a row could not connect (%v); is the server running, and is the base URL right? Answered requests are in the cache",
			redactedURL(j.cfg.BaseURL), llm.UnreachableStreakLimit, err)
	case llm.StreakFailing:
		return fmt.Errorf("the endpoint at %s keeps failing: %d requests in a row ran out of retries (last: %v); answered requests are in the cache",
			redactedURL(j.cfg.BaseURL), n, err)
	}
	return nil
}

// estimate is an upper bound of what a request costs: its prompt counted
// as one token per byte (a token holds at least one) plus the chat
// template's, and the reply as MaxTokens, else twice the most tokens per
// item a reply has used yet (+Inf before the first reply: it goes alone).
func (j *rejudger) estimate(price func(model string, prompt, completion int64) float64, msgs []llm.Message, items int) float64 {
	prompt := int64(16)
	for _, m := range msgs {
		prompt += int64(len(m.Content)) + 16
	}
	completion := int64(j.cfg.MaxTokens)
	if completion <= 0 {
		j.mu.Lock()
		perItem := j.completionPerItem
		j.mu.Unlock()
		if perItem == 0 {
			return math.Inf(1)
		}
		completion = 2 * perItem * int64(items)
	}
	return price(j.cfg.Model, prompt, completion)
}

// observe keeps the most completion tokens per item a reply used.
func (j *rejudger) observe(resp *llm.Response, items int) {
	per := (resp.CompletionTokens + int64(items) - 1) / int64(items)
	j.mu.Lock()
	j.completionPerItem = max(j.completionPerItem, per)
	j.mu.Unlock()
}

// judge asks the judge about one record's drawn items.
func (j *rejudger) judge(ctx context.Context, g []SampleItem) ([]verdictPair, error) {
	items := make([]schema.Item, len(g))
	ids := make([]int32, len(g))
	for i, it := range g {
		items[i] = schema.Item{ID: it.ItemID, Type: it.Type, Text: it.Text, Weight: 1, Polarity: schema.PolarityOf(it.Type)}
		ids[i] = it.ItemID
	}
	msgs, err := j.prompts.JudgeBatchMessages(g[0].Problem, g[0].Answer, items)
	if err != nil {
		return nil, err
	}
	release, err := j.gate.Reserve(ctx, func() float64 { return j.estimate(j.cost, msgs, len(g)) })
	if err != nil {
		return nil, err
	}
	defer release()
	temp := j.cfg.Temperature
	req := llm.Request{Stage: StageRejudge, Model: j.cfg.Model, Messages: msgs, Temperature: &temp, MaxTokens: j.cfg.MaxTokens,
		Seed: j.cfg.JudgeSeed, Scope: llm.Scope{EndpointKind: llm.EndpointKind(j.cfg.EndpointKind, j.cfg.BaseURL), Template: j.prompts.Hash(prompts.JudgeBatch)}}
	var verdicts []schema.Verdict
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What: "validity verdicts", Repairs: j.cfg.Repairs, Repair: j.prompts.RepairMessages,
		OnResponse: func(resp *llm.Response) { j.observe(resp, len(g)) },
		Parse: func(reply string) error {
			vs, err := schema.ParseValidityBatch(reply, ids)
			verdicts = vs
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	out := make([]verdictPair, len(g))
	for i, it := range g {
		out[i] = verdictPair{RecordID: it.RecordID, ItemID: it.ItemID, Type: it.Type, Text: it.Text, Stored: *it.Stored,
			Other: verdicts[i].Valid, Reason: verdicts[i].Reason}
	}
	return out, nil
}
