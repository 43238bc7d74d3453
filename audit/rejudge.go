package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
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
// configuration, a fatal endpoint error (wrong key, model or URL), a
// cancelled context.
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
	j := &rejudger{cfg: cfg, client: client, prompts: set, log: cfg.Logger}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	pairs, err := j.run(ctx, groups, rep.Sample)
	s := meter.Snapshot().Total
	rep.LLM = &LLMUsage{Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries, Failures: s.Failures, Repairs: s.Repairs,
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, CostUSD: s.CostUSD}
	if err != nil {
		return rep, err
	}
	rep.finish(pairs)
	return rep, nil
}

// newJudgeClient makes the client, its cache and its meter.
func newJudgeClient(cfg RejudgeConfig) (*llm.Client, *llm.Meter, func(), error) {
	var cache *llm.Cache
	if cfg.CachePath != "" {
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
}

// run judges every group; it returns the judged pairs, in sample order.
// A budget stop ends it early (recorded in info); a fatal error ends it
// with that error.
func (j *rejudger) run(ctx context.Context, groups [][]SampleItem, info *SampleInfo) ([]verdictPair, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([][]verdictPair, len(groups))
	failed := make([]error, len(groups))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(j.cfg.Concurrency, len(groups))) {
		wg.Go(func() {
			for i := range work {
				results[i], failed[i] = j.judge(ctx, groups[i])
				if failed[i] != nil && (llm.ClassOf(failed[i]) == llm.ClassFatal || errors.Is(failed[i], llm.ErrBudgetExhausted)) {
					cancel(failed[i])
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
		}
	}
	close(work)
	wg.Wait()
	cause := context.Cause(ctx)
	switch {
	case cause != nil && llm.ClassOf(cause) == llm.ClassFatal:
		return nil, fmt.Errorf("rejudging: %w", cause)
	case errors.Is(cause, llm.ErrBudgetExhausted):
		info.Stopped = fmt.Sprintf("the budget of $%g is spent; items not judged are counted as failed (a second run with a higher --max-cost-usd answers the judged ones from the cache)", j.cfg.MaxCostUSD)
	case cause != nil:
		return nil, cause
	}
	var pairs []verdictPair
	for i, g := range groups {
		if results[i] == nil {
			info.Failed += len(g)
			if failed[i] != nil && !errors.Is(failed[i], context.Canceled) && !errors.Is(failed[i], llm.ErrBudgetExhausted) {
				j.log.Warn("an item group could not be judged", "record", g[0].RecordID, "items", len(g), "err", failed[i])
			}
			continue
		}
		info.Judged += len(g)
		pairs = append(pairs, results[i]...)
	}
	return pairs, nil
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
	temp := j.cfg.Temperature
	req := llm.Request{Stage: StageRejudge, Model: j.cfg.Model, Messages: msgs, Temperature: &temp, MaxTokens: j.cfg.MaxTokens}
	var verdicts []schema.Verdict
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What: "validity verdicts", Repairs: j.cfg.Repairs, Repair: j.prompts.RepairMessages,
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
