package rejudge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// Config says which judge re-runs validity judging, on what sample,
// at what cost. The API key comes from the caller (read from the
// environment); it never reaches the report, logs or errors.
type Config struct {
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
	// Judging: the judge_batch template (PromptsDir overrides it) in
	// Layout (prompts.Layout; "" is the cache layout), sampling
	// temperature, token limit, repair turns.
	PromptsDir      string
	Layout          prompts.Layout
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
	// Panel, when it names judges, asks each of them instead of Model: the
	// settings above are their defaults (as a stage's are for its panel in
	// a job file), and the panel's verdict is judgestats.Majority of
	// theirs. Prices holds prices by model; a model not in it costs Price.
	Panel  []PanelJudge
	Prices map[string]llm.Price
	// OrderCheck > 0 re-judges every judged item of OrderCheck records
	// (drawn with Seed instead of Sample items) twice, in rubric order and
	// in reverse, and reports how often a verdict changes with the order.
	// A grounded question counts as a record.
	OrderCheck int
	// Group is validate rejudge --judge-group's count of response groups
	// to draw (RunGroup).
	Group int
	// JudgePassageTokens bounds the passage a grounded question's criteria
	// are judged against, in estimated tokens, as distill run's
	// grounded.judge_passage_tokens does (0: its default).
	JudgePassageTokens int
}

// The passage budget of a grounded rejudge: distill run's default and
// least grounded.judge_passage_tokens.
const (
	DefaultJudgePassageTokens = prompts.DefaultJudgePassageTokens
	MinJudgePassageTokens     = prompts.MinJudgePassageTokens
)

// judgePassageTokens is JudgePassageTokens or its default.
func (cfg Config) judgePassageTokens() int {
	return cmp.Or(cfg.JudgePassageTokens, DefaultJudgePassageTokens)
}

// PanelJudge is one judge of a rejudge's panel. A setting left empty (nil
// for Temperature) takes the Config's.
type PanelJudge struct {
	Name, BaseURL, APIKey, Model, PromptsDir string
	EndpointKind                             string // "" for cfg's, else llm.EndpointKind's default of its base URL
	Temperature                              *float64
	MaxTokens                                int
	LegacyMaxTokens                          bool
}

// ParseLayout reads --judge-layout: the layout of the judge_batch
// template a rejudge asks with (prompts.ParseLayout).
func ParseLayout(s string) (prompts.Layout, error) { return prompts.ParseLayout(s) }

// StageRejudge is the meter's stage name for rejudge requests; a panel's
// judges each have their own, StageRejudge + ":" + the judge's name.
const StageRejudge = "rejudge"

// DefaultConcurrency is how many records a rejudge judges at once.
const DefaultConcurrency = 16

// Run draws a reproducible sample of judged items from in, asks another
// judge about them through llm (cache, retries, rate control, cost
// accounting, budget stop) with the pipeline's judge_batch prompt (one
// request per record, holding that record's drawn items), and reports its
// agreement with the stored verdicts. Items the judge could not answer are
// counted as failed. With a panel (cfg.Panel) every judge is asked and the
// report adds each judge's figures and their agreement with each other
// (Report.Panel); with cfg.OrderCheck the items are asked in both orders
// (Report.OrderCheck). The error is for what stops the whole rejudge: bad
// configuration, a fatal endpoint error (wrong key, model or URL), an
// endpoint where nothing answers (llm.Streak, the rule distill run keeps),
// a cancelled context. When ctx is cancelled the report comes with the
// error, its figures over the items judged before (Sample.Stopped says so).
func Run(ctx context.Context, in *audit.Input, cfg Config) (*audit.AgreementReport, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	specs := cfg.judges()
	sets := make([]*prompts.Set, len(specs))
	for i, sp := range specs {
		set, err := prompts.Load(sp.PromptsDir)
		if err != nil {
			return nil, fmt.Errorf("judge %s: %w", sp.Name, err)
		}
		sets[i] = set
	}
	groups, eligible, problems, err := drawGroups(ctx, in, cfg)
	if err != nil {
		return nil, err
	}
	rep := audit.NewAgreementReport(in, againstOf(cfg, specs))
	rep.Tool = cfg.Tool
	rep.InputProblems = append(rep.InputProblems, problems...)
	kinds := kindsOf(groups)
	if len(cfg.Panel) == 0 {
		rep.Judge = &audit.JudgeInfo{BaseURL: redactedURL(cfg.BaseURL), Model: cfg.Model}
		rep.Judge.Template, rep.Judge.GroundedTemplate = kinds.templates(sets[0], cfg.Layout)
	}
	drawn := 0
	for _, g := range groups {
		drawn += len(g)
	}
	rep.Sample = &audit.SampleInfo{Seed: cfg.Seed, Requested: cfg.Sample, Eligible: eligible, Drawn: drawn, Records: len(groups)}
	if cfg.OrderCheck > 0 {
		rep.Sample.Requested = drawn
	}
	if drawn == 0 {
		rep.AddRejudged(&audit.Rejudged{})
		return rep, nil
	}
	meter := llm.NewMeter(cfg.prices(specs), llm.Budget{MaxCostUSD: cfg.MaxCostUSD})
	j, closeAll, err := newRejudger(cfg, specs, sets, meter)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	answers, err := j.run(ctx, j.units(len(groups)), groups, rep.Sample)
	rep.LLM = usageOf(meter.Snapshot().Total)
	if err != nil && !errors.Is(err, context.Canceled) {
		return rep, err
	}
	rep.AddRejudged(j.rejudged(groups, answers, meter.Snapshot())) // when interrupted, over the items judged before
	return rep, err
}

// sampleKinds says which kinds of judged thing a sample holds: math
// records' rubric items, grounded questions' criteria, or both (a mixed
// corpus).
type sampleKinds struct{ items, criteria bool }

func kindsOf(groups [][]audit.SampleItem) sampleKinds {
	var k sampleKinds
	for _, g := range groups {
		if g[0].Criterion != nil {
			k.criteria = true
		} else {
			k.items = true
		}
	}
	return k
}

// templates are the hashes of the validity templates a judge with set
// asks the sample with, in layout l: judge_batch's for math items (also
// for an empty sample), grounded_judge_batch's for criteria; "" for a
// kind the sample does not hold.
func (k sampleKinds) templates(set *prompts.Set, l prompts.Layout) (items, criteria audit.NullString) {
	if k.items || !k.criteria {
		items = audit.NullString(set.Hash(l.Of(prompts.JudgeBatch)))
	}
	if k.criteria {
		criteria = audit.NullString(set.Hash(l.Of(prompts.GroundedJudgeBatch)))
	}
	return items, criteria
}

// againstOf names whose verdicts a rejudge compares with the stored ones.
func againstOf(cfg Config, specs []judgeSpec) string {
	if len(cfg.Panel) == 0 {
		return "judge " + cfg.Model
	}
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = sp.Name
	}
	return fmt.Sprintf("panel (%s)", strings.Join(names, ", "))
}

// drawGroups draws the items to judge, grouped by record: cfg.Sample items
// (each record's in rubric order), or with cfg.OrderCheck that many
// records with all their judged items.
func drawGroups(ctx context.Context, in *audit.Input, cfg Config) ([][]audit.SampleItem, int64, []audit.Problem, error) {
	if cfg.OrderCheck > 0 {
		return audit.SampleRecords(ctx, in, cfg.OrderCheck, cfg.Seed)
	}
	items, eligible, problems, err := audit.SampleItems(ctx, in, cfg.Sample, cfg.Seed, true, true)
	return groupByRecord(items), eligible, problems, err
}

func usageOf(s llm.StageStats) *audit.LLMUsage {
	return &audit.LLMUsage{Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries, Failures: s.Failures, Repairs: s.Repairs,
		PromptTokens: s.PromptTokens, CachedPromptTokens: s.CachedPromptTokens, CompletionTokens: s.CompletionTokens, CostUSD: s.CostUSD}
}

// judgeSpec is one judge with every setting resolved.
type judgeSpec struct {
	Name, BaseURL, APIKey, Model, PromptsDir string
	EndpointKind                             string
	Temperature                              float64
	MaxTokens                                int
	LegacyMaxTokens                          bool
	Stage                                    string
}

// judges resolves the judges to ask: the panel's, each setting it leaves
// out taken from cfg, or cfg's one judge.
func (cfg Config) judges() []judgeSpec {
	if len(cfg.Panel) == 0 {
		return []judgeSpec{{Name: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, PromptsDir: cfg.PromptsDir, EndpointKind: cfg.EndpointKind,
			Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, LegacyMaxTokens: cfg.LegacyMaxTokens, Stage: StageRejudge}}
	}
	specs := make([]judgeSpec, len(cfg.Panel))
	for i, p := range cfg.Panel {
		sp := judgeSpec{Name: p.Name, BaseURL: cmp.Or(p.BaseURL, cfg.BaseURL), APIKey: cmp.Or(p.APIKey, cfg.APIKey),
			Model: cmp.Or(p.Model, cfg.Model), PromptsDir: cmp.Or(p.PromptsDir, cfg.PromptsDir), Temperature: cfg.Temperature,
			MaxTokens: cmp.Or(p.MaxTokens, cfg.MaxTokens), LegacyMaxTokens: p.LegacyMaxTokens || cfg.LegacyMaxTokens,
			EndpointKind: p.EndpointKind}
		if p.BaseURL == "" && p.EndpointKind == "" {
			sp.EndpointKind = cfg.EndpointKind // at cfg's endpoint, of cfg's kind
		}
		if p.Temperature != nil {
			sp.Temperature = *p.Temperature
		}
		sp.Name = cmp.Or(sp.Name, sp.Model)
		sp.Stage = StageRejudge + ":" + sp.Name
		specs[i] = sp
	}
	return specs
}

// prices are the meter's prices of the judges' models.
func (cfg Config) prices(specs []judgeSpec) map[string]llm.Price {
	out := map[string]llm.Price{}
	for _, sp := range specs {
		p, ok := cfg.Prices[sp.Model]
		if !ok {
			p = cfg.Price
		}
		out[sp.Model] = p
	}
	return out
}

// openCache opens the response cache; nil for none.
func openCache(path string) (*cache.Cache, error) {
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("the response cache's directory: %w", err)
	}
	return cache.Open(path)
}

// newRejudger makes one client per judge, sharing the cache and the meter
// (whose budget gate every client reserves each live attempt with); close
// releases them.
func newRejudger(cfg Config, specs []judgeSpec, sets []*prompts.Set, meter *llm.Meter) (*rejudger, func(), error) {
	cache, err := openCache(cfg.CachePath)
	if err != nil {
		return nil, nil, err
	}
	j := &rejudger{cfg: cfg, log: cfg.Logger}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	closeAll := func() {
		for _, p := range j.judges {
			p.client.Close()
		}
		if cache == nil {
			return
		}
		if err := cache.Close(); err != nil { // the report holds every answer: a later run may pay some again
			j.log.Warn("closing the response cache", "err", err)
		}
	}
	for i, sp := range specs {
		client, err := llm.NewClient(llm.Endpoint{BaseURL: sp.BaseURL, APIKey: sp.APIKey}, llm.Options{
			MaxInFlight: cfg.Concurrency, AttemptTimeout: cfg.AttemptTimeout, MaxAttempts: cfg.MaxAttempts,
			BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax,
			HTTPClient: cfg.HTTPClient, LegacyMaxTokens: sp.LegacyMaxTokens, Logger: cfg.Logger,
		}, cache, meter)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("judge %s: %w", sp.Name, err)
		}
		j.judges = append(j.judges, &panelist{spec: sp, client: client, prompts: sets[i], layout: cfg.Layout,
			template: sets[i].Hash(cfg.Layout.Of(prompts.JudgeBatch)), groundedTemplate: sets[i].Hash(cfg.Layout.Of(prompts.GroundedJudgeBatch))})
	}
	return j, closeAll, nil
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
func groupByRecord(items []audit.SampleItem) [][]audit.SampleItem {
	at := map[string]int{}
	var groups [][]audit.SampleItem
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
		slices.SortFunc(g, func(a, b audit.SampleItem) int { return cmp.Compare(a.ItemID, b.ItemID) })
	}
	return groups
}

// rejudger asks its judges about groups of items, a bounded number of
// requests at once.
type rejudger struct {
	cfg    Config
	judges []*panelist
	log    *slog.Logger
}

// panelist is one judge of a rejudge, with its client and its own count
// of failures in a row.
type panelist struct {
	spec    judgeSpec
	client  *llm.Client
	prompts *prompts.Set
	// template and groundedTemplate are the hashes of the judge_batch and
	// grounded_judge_batch templates it asks with.
	template, groundedTemplate string
	layout                     prompts.Layout

	mu     sync.Mutex
	streak llm.Streak // records in a row whose request failed for the endpoint's sake
}

// unit is one request: a group's items shown to one judge, in rubric
// order or reversed.
type unit struct {
	group, judge int
	reversed     bool
}

// answer is a unit's outcome: its verdicts in the group's order, or why
// there are none. asked is false for a unit never sent (a budget stop, an
// interruption).
type answer struct {
	pairs []audit.ComparedItem
	err   error
	asked bool
}

// units lists the requests of n groups: every judge on each group in
// turn, and with the order check the reversed order after each. A budget
// stop (the llm client refusing an attempt that could pass the budget)
// then falls within the last groups sent, and a group some judge was
// never asked about gets no panel verdict (panelVerdicts), so an item is
// judged by the whole panel or by none.
func (j *rejudger) units(n int) []unit {
	var out []unit
	for g := range n {
		for k := range j.judges {
			out = append(out, unit{group: g, judge: k})
			if j.cfg.OrderCheck > 0 {
				out = append(out, unit{group: g, judge: k, reversed: true})
			}
		}
	}
	return out
}

// run asks every unit; it returns their answers, in units' order. A
// budget stop or an interruption (ctx cancelled) ends it early, recorded
// in info, with the answers before; a fatal error, or an endpoint where
// nothing answers, ends it with that error.
func (j *rejudger) run(parent context.Context, units []unit, groups [][]audit.SampleItem, info *audit.SampleInfo) ([]answer, error) {
	answers := make([]answer, len(units))
	outs, stopped, err := j.runAll(parent, len(units), func(i int) *panelist { return j.judges[units[i].judge] },
		func(ctx context.Context, i int) error {
			u := units[i]
			pairs, err := j.judge(ctx, j.judges[u.judge], groups[u.group], u.reversed)
			answers[i].pairs = pairs
			return err
		},
		func(i int) []any {
			g := groups[units[i].group]
			return []any{"record", g[0].RecordID, "items", len(g)}
		})
	if outs == nil {
		return nil, err
	}
	for i, o := range outs {
		answers[i].err, answers[i].asked = o.err, o.asked
	}
	if stopped != "" {
		info.Stopped = audit.NullString(stopped)
	}
	return answers, err
}

// outcome is how one request of a rejudge ended: err is nil when it was
// answered; asked is false for a request never sent (a budget stop, an
// interruption).
type outcome struct {
	err   error
	asked bool
}

// runAll sends requests 0..n-1, at most Concurrency at once, request i by
// judge judgeOf(i) through ask, and returns their outcomes in order; what
// names a request in a warning comes from about. A budget stop or an
// interruption (parent cancelled) ends it early, with the outcomes before
// and why it stopped; a fatal error, or an endpoint where nothing
// answers, ends it with that error and no outcomes. When parent was
// cancelled the error is its cause.
func (j *rejudger) runAll(parent context.Context, n int, judgeOf func(int) *panelist, ask func(context.Context, int) error, about func(int) []any) ([]outcome, string, error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	outs := make([]outcome, n)
	work := make(chan int)
	spent := make(chan struct{}) // closed at the budget stop: the requests in flight, reserved within it, finish
	var stopFeeding sync.Once
	var wg sync.WaitGroup
	for range max(1, min(j.cfg.Concurrency, n)) {
		wg.Go(func() {
			for i := range work {
				p := judgeOf(i)
				err := ask(ctx, i)
				outs[i] = outcome{err: err, asked: !errors.Is(err, llm.ErrBudgetExhausted) && llm.ClassOf(err) != llm.ClassCanceled}
				if errors.Is(err, llm.ErrBudgetExhausted) {
					stopFeeding.Do(func() { close(spent) })
				} else if stop := p.stopsAll(err); stop != nil {
					cancel(stop)
				}
			}
		})
	}
feed:
	for i := range n {
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
	stopped := ""
	switch {
	case parent.Err() != nil:
		stopped = "interrupted: the figures are over the items judged before; answered requests are in the cache, so running again pays only for the rest"
	case cause != nil:
		return nil, "", cause
	case isClosed(spent):
		stopped = fmt.Sprintf("the budget of $%g is spent, or the next request would pass it; items not judged are counted as failed (a second run with a higher --max-cost-usd answers the judged ones from the cache)", j.cfg.MaxCostUSD)
	}
	for i, o := range outs {
		if o.err != nil && o.asked {
			j.log.Warn("a request could not be judged", append([]any{"judge", judgeOf(i).spec.Name, "err", o.err}, about(i)...)...)
		}
	}
	if parent.Err() != nil {
		return outs, stopped, context.Cause(parent)
	}
	return outs, stopped, nil
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
// what: a fatal endpoint error (wrong key, model or URL), or the streak of
// failures distill run stops on (nothing listens, or the endpoint keeps
// failing), counted per judge. A reply that never parsed is the group's
// alone.
func (p *panelist) stopsAll(err error) error {
	var le *llm.Error
	switch {
	case errors.Is(err, context.Canceled):
		return nil
	case errors.As(err, &le) && le.Class == llm.ClassFatal:
		return fmt.Errorf("rejudging with %s: %w", p.spec.Name, err)
	}
	p.mu.Lock()
	verdict, n := p.streak.Observe(err), p.streak.Len()
	p.mu.Unlock()
	switch verdict {
	case llm.StreakUnreachable:
		return fmt.Errorf("nothing answers at %s: %d requests in a row could not connect (%v); is the server running, and is the base URL right? Answered requests are in the cache",
			redactedURL(p.spec.BaseURL), llm.UnreachableStreakLimit, err)
	case llm.StreakFailing:
		return fmt.Errorf("the endpoint at %s keeps failing: %d requests in a row ran out of retries (last: %v); answered requests are in the cache",
			redactedURL(p.spec.BaseURL), n, err)
	}
	return nil
}

// judge asks judge p about one record's drawn items (or one grounded
// question's drawn criteria), shown in rubric order or reversed; the
// verdicts come back in the group's order.
func (j *rejudger) judge(ctx context.Context, p *panelist, g []audit.SampleItem, reversed bool) ([]audit.ComparedItem, error) {
	shown := slices.Clone(g)
	if reversed {
		slices.Reverse(shown)
	}
	msgs, ids, template, err := j.messages(p, shown)
	if err != nil {
		return nil, err
	}
	temp := p.spec.Temperature
	req := llm.Request{Stage: p.spec.Stage, Model: p.spec.Model, Messages: msgs, Temperature: &temp, MaxTokens: p.spec.MaxTokens,
		Seed: j.cfg.JudgeSeed, Scope: llm.Scope{EndpointKind: llm.EndpointKind(p.spec.EndpointKind, p.spec.BaseURL), Template: template}}
	var verdicts []schema.Verdict
	err = p.client.ChatParsed(ctx, req, llm.Ask{
		What: "validity verdicts", Repairs: j.cfg.Repairs, Repair: p.prompts.RepairMessages,
		Parse: func(reply string) error {
			vs, err := schema.ParseValidityBatch(reply, ids)
			verdicts = vs
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	out := make([]audit.ComparedItem, len(g))
	for i, it := range shown {
		at := i
		if reversed {
			at = len(g) - 1 - i
		}
		out[at] = audit.ComparedItem{RecordID: it.RecordID, ItemID: it.ItemID, Type: it.Type, Text: it.Text, Stored: *it.Stored,
			Other: verdicts[i].Valid, Reason: verdicts[i].Reason}
	}
	return out, nil
}

// messages renders judge p's validity request about the items shown, in
// that order, with the template of their kind: judge_batch for a math
// record's rubric items, each under its id; grounded_judge_batch for a
// grounded question's criteria, against the passage cut as distill run
// cuts it for its judge (Config.JudgePassageTokens), numbered as shown, as
// distill run numbers them. It returns the ids the reply must give, in the
// order shown, and the template's hash.
func (j *rejudger) messages(p *panelist, shown []audit.SampleItem) ([]llm.Message, []int32, string, error) {
	ids := make([]int32, len(shown))
	if shown[0].Criterion != nil {
		criteria := make([]schema.Criterion, len(shown))
		for i, it := range shown {
			criteria[i] = *it.Criterion
			ids[i] = int32(i + 1)
		}
		passage, _ := prompts.FitPassage(shown[0].Answer, j.cfg.judgePassageTokens())
		msgs, err := p.prompts.GroundedJudgeBatchMessagesIn(p.layout, passage, shown[0].Problem, criteria)
		return msgs, ids, p.groundedTemplate, err
	}
	items := make([]schema.Item, len(shown))
	for i, it := range shown {
		items[i] = schema.Item{ID: it.ItemID, Type: it.Type, Text: it.Text, Weight: 1, Polarity: schema.PolarityOf(it.Type)}
		ids[i] = it.ItemID
	}
	msgs, err := p.prompts.JudgeBatchMessagesIn(p.layout, shown[0].Problem, shown[0].Answer, items)
	return msgs, ids, p.template, err
}

// rejudged gathers the answers of j.units(len(groups)) for the report: by
// group and judge, in rubric order and reversed (nil without the order
// check), with every judge's endpoint and cost.
func (j *rejudger) rejudged(groups [][]audit.SampleItem, answers []answer, snap llm.Snapshot) *audit.Rejudged {
	x := &audit.Rejudged{Groups: groups, Panel: len(j.cfg.Panel) > 0}
	kinds := kindsOf(groups)
	for _, p := range j.judges {
		rj := audit.RejudgeJudge{Name: p.spec.Name, Model: p.spec.Model, BaseURL: redactedURL(p.spec.BaseURL)}
		rj.Template, rj.GroundedTemplate = kinds.templates(p.prompts, j.cfg.Layout)
		if s, ok := snap.Stages[p.spec.Stage]; ok {
			rj.LLM = usageOf(s)
		}
		x.Judges = append(x.Judges, rj)
	}
	x.Forward = make([][]audit.JudgeAnswer, len(groups))
	if j.cfg.OrderCheck > 0 {
		x.Reversed = make([][]audit.JudgeAnswer, len(groups))
	}
	for g := range groups {
		x.Forward[g] = make([]audit.JudgeAnswer, len(j.judges))
		if x.Reversed != nil {
			x.Reversed[g] = make([]audit.JudgeAnswer, len(j.judges))
		}
	}
	for i, u := range j.units(len(groups)) {
		a := audit.JudgeAnswer{Items: answers[i].pairs, Asked: answers[i].asked}
		if u.reversed {
			x.Reversed[u.group][u.judge] = a
		} else {
			x.Forward[u.group][u.judge] = a
		}
	}
	return x
}
