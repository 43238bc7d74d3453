package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/rejudge"
)

const rejudgeUsage = `Usage: validate rejudge --base-url URL --model MODEL [flags] CORPUS
       validate rejudge --panel FILE [--base-url URL] [flags] CORPUS

Re-runs validity judging with another judge on a reproducible sample of the
corpus's judged items (the same --seed draws the same items) and reports its
agreement with the stored verdicts: agreement rate and Cohen's kappa,
overall and by item type, and the items judged differently with the new
judge's reasons. A math record's items are asked with distill run's
judge_batch prompt, one request per record; a grounded record's criteria
(seed 001) with its grounded_judge_batch prompt, one request per question,
against the passage (cut to --judge-passage-tokens as distill run cuts it),
and are counted under the type "criterion"; a corpus holding both kinds has
each record asked by its own. Requests go through the same client as
distill run: retries, rate control,
a response cache (a second run costs nothing), token and cost accounting
and a budget stop that holds with many requests in flight (each request's
estimated cost is reserved before it is sent). Like distill run, it stops
with one message when nothing answers at the URL (three requests in a row
could not connect). Ctrl-C prints the figures of the items judged so far
and exits 4. The API key is read from the environment variable named by
--api-key-env, never from a flag.

With --panel, every judge of the panel file (a YAML list of judges, each
with name, model, base_url, api_key_env, temperature, max_tokens,
prompts_dir; the flags are the defaults of what a judge leaves out) is
asked, the panel's verdict is a strict majority (a judge that failed counts
as a vote against; a tie is invalid), and the report adds each judge's
agreement with the stored verdicts and with the panel, the judges' Fleiss'
kappa by item type, their failures, and the validity rates with 95% Wilson
intervals. It costs one request per record per judge; --price prices each
judge's model.

With --order-check N, N records (a grounded question counts as one) are
drawn with --seed instead of --sample items, and every judged item of
theirs is asked twice (in rubric order and reversed: twice the requests):
the report adds the flip rate by item type (the share of items whose
verdict changed with the order, with a 95% interval), whether flipped
items were called valid where they came earlier, the mark of a judge that
favours what it sees first, and the position bias (valid only where shown
earlier minus valid only where shown later, over the items) with its 95%
interval.

With --judge-group N, it measures group judging instead of validity: N
response groups are drawn (a math record's rollouts against its rubric, a
grounded question's closed-book answers against its criteria) and each
judge is asked about every response in a request of its own (as rewardd
asks by default) and about the whole group in one request (as rewardd
--judge-group asks), in the order rewardd draws and reversed: the report
gives, by judge and with --panel for the panel's majority, the agreement
of the group's verdicts with the one-by-one verdicts (rate, Cohen's kappa,
by type) and the group order's flip rate and position bias with their
95% intervals. A grounded criterion counts as met when it scored at least
half its weight. It costs one request per response and two per group.

Examples:
  validate rejudge runs/math16k --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B --sample 500 --seed 1
  OPENAI_API_KEY=... validate rejudge runs/math16k --base-url https://api.openai.com/v1 --model gpt-4.1-mini \
      --price-prompt 0.40 --price-completion 1.60 --max-cost-usd 2
  validate rejudge runs/math16k --panel panel.yaml --base-url http://127.0.0.1:8000/v1 --sample 500 \
      --price Qwen/Qwen3-8B=0.05,0.20 --price gpt-4.1-mini=0.40,1.60 --max-cost-usd 5
  validate rejudge runs/math16k --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B --order-check 100
  validate rejudge runs/docs-grounded --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B --sample 300
  validate rejudge runs/math16k --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B --judge-group 50
`

// rejudgeFlags are the flags of validate rejudge.
type rejudgeFlags struct {
	baseURL, model, keyEnv, cache, promptsDir *string
	panel                                     *string
	judgeSeed, endpointKind, layout           *string
	sample, maxTokens, repairs, concurrency   *int
	orderCheck, passageTokens, group          *int
	prices                                    priceFlags
	maxAttempts                               *int
	seed                                      *uint64
	pricePrompt, priceCompletion, maxCost     *float64
	priceCached                               *float64
	temperature                               *float64
	timeout                                   *time.Duration
	legacy, asJSON                            *bool
}

func rejudgeCmd(ctx context.Context, args []string, e env) int {
	fs := newFlags("validate rejudge", rejudgeUsage, e)
	f := rejudgeFlags{
		baseURL:         fs.String("base-url", "", "the judge's OpenAI-compatible endpoint including /v1; e.g. http://127.0.0.1:8000/v1"),
		model:           fs.String("model", "", "the judge model; e.g. gpt-4.1-mini"),
		keyEnv:          fs.String("api-key-env", "OPENAI_API_KEY", "environment variable holding the API key (unset or empty: no key sent)"),
		sample:          fs.Int("sample", 200, "judged items to draw"),
		seed:            fs.Uint64("seed", 1, "seed of the draw: which items are sampled (not the judge's sampling seed, see --judge-seed)"),
		judgeSeed:       fs.String("judge-seed", "0", "the sampling seed sent with every judge request, part of its cache key; none sends no seed, for a server that refuses one (e.g. --judge-seed 7, --judge-seed none)"),
		endpointKind:    fs.String("endpoint-kind", "", "the judge server's kind, part of every verdict's cache key so one kind's verdicts are not replayed as another's; empty: openai for api.openai.com, else openai-compatible (e.g. --endpoint-kind vllm)"),
		cache:           fs.String("cache", defaultRejudgeCache(e.getenv), `response cache file ("" for none); a second run answers from it; by default in the user cache directory ($XDG_CACHE_HOME, else ~/.cache), not the current one`),
		pricePrompt:     fs.Float64("price-prompt", 0, "the model's price in USD per million prompt tokens, for the cost figure and --max-cost-usd"),
		priceCompletion: fs.Float64("price-completion", 0, "the model's price in USD per million completion tokens"),
		priceCached:     fs.Float64("price-cached-prompt", 0, "the model's price in USD per million prompt tokens the server's prefix cache reused (usage.prompt_tokens_details; 0: --price-prompt); e.g. --price-cached-prompt 0.10"),
		layout:          fs.String("judge-layout", "cache", "the judge_batch template's layout: cache (the instructions first, the problem's items last, as distill run asks by default) or paper (the items before the instructions, as runs before layouts); --order-check measures either; e.g. --judge-layout paper"),
		maxCost:         fs.Float64("max-cost-usd", 0, "stop sending requests once this much is spent (0: no limit); needs prices"),
		concurrency:     fs.Int("concurrency", rejudge.DefaultConcurrency, "requests in flight"),
		timeout:         fs.Duration("attempt-timeout", 2*time.Minute, "deadline of one request attempt"),
		maxAttempts:     fs.Int("max-attempts", 6, "attempts per request for retryable errors (429, 5xx, timeouts)"),
		temperature:     fs.Float64("temperature", 0, "the judge's sampling temperature"),
		maxTokens:       fs.Int("max-tokens", 0, "the judge's max completion tokens (0: server default)"),
		repairs:         fs.Int("repairs", 2, "times a reply that does not parse is shown back to the judge with the error"),
		legacy:          fs.Bool("legacy-max-tokens", false, "send the token limit as max_tokens (older servers)"),
		promptsDir:      fs.String("prompts-dir", "", "directory whose judge_batch.tmpl, grounded_judge_batch.tmpl (and their _paper twins) or repair.tmpl replace the embedded templates"),
		asJSON:          fs.Bool("json", false, "print the result as JSON"),
		panel:           fs.String("panel", "", "a panel file: the judges to ask instead of --model, one verdict each, decided by strict majority; e.g. panel.yaml"),
		orderCheck:      fs.Int("order-check", 0, "draw this many records (or grounded questions) instead of --sample items and ask each judge about their items in rubric order and reversed; e.g. 100"),
		group:           fs.Int("judge-group", 0, "instead of validity, measure group judging: draw this many response groups (a record's rollouts, a grounded question's answers) and ask each judge about every response alone, and about the whole group in one request in its order and reversed; e.g. 12"),
		passageTokens:   fs.Int("judge-passage-tokens", rejudge.DefaultJudgePassageTokens, "the most estimated tokens of a grounded passage the judge is shown (a longer one is cut head and tail, as distill run's grounded.judge_passage_tokens cuts it; give the run's value); e.g. 8192"),
		prices:          priceFlags{},
	}
	fs.Var(f.prices, "price", "a judge model's price in USD per million prompt and completion tokens, MODEL=PROMPT,COMPLETION (repeatable; a model without one costs --price-prompt/--price-completion); e.g. gpt-4.1-mini=0.40,1.60")
	paths, code, done := parseOrExit(fs, args)
	if done {
		return code
	}
	if msg := f.check(paths); msg != "" {
		fmt.Fprintf(e.stderr, "validate rejudge: %s; see -h\n", msg)
		return exitUsage
	}
	panel, err := f.readPanel(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "validate rejudge: %v\n", err)
		return exitUsage
	}
	if unpriced := f.unpriced(panel); *f.maxCost > 0 && len(unpriced) > 0 {
		fmt.Fprintf(e.stderr, "validate rejudge: --max-cost-usd cannot be enforced without a price for %s (--price MODEL=PROMPT,COMPLETION, or --price-prompt and --price-completion for all); see -h\n",
			strings.Join(unpriced, ", "))
		return exitUsage
	}
	in, code, ok := openCorpus("validate rejudge", paths, e)
	if !ok {
		return code
	}
	cfg := f.config(e)
	cfg.Panel = panel
	if cfg.Group > 0 {
		return rejudgeGroup(ctx, in, cfg, *f.asJSON, e)
	}
	rep, err := rejudge.Run(ctx, in, cfg)
	switch {
	case errors.Is(err, context.Canceled) && rep != nil:
		printAgreement("validate rejudge", rep, *f.asJSON, e)
		fmt.Fprintf(e.stderr, "validate rejudge: interrupted after %d of %d drawn items; the figures above are over those; answered requests are in the cache, so the same command pays only for the rest\n",
			rep.Sample.Judged, rep.Sample.Drawn)
		return exitStopped
	case err != nil:
		fmt.Fprintf(e.stderr, "validate rejudge: %v\n", err)
		return exitFailed
	}
	return writeAgreement("validate rejudge", rep, *f.asJSON, e)
}

// exitStopped: interrupted (Ctrl-C), as distill run's exit 4; rejudge
// prints the figures of the items judged before.
const exitStopped = 4

// check returns what is wrong with the flags, or "".
func (f *rejudgeFlags) check(paths []string) string {
	switch {
	case len(paths) != 1:
		return "give one corpus"
	case *f.panel == "" && (*f.baseURL == "" || *f.model == ""):
		return "--base-url and --model name the judge (or --panel FILE the judges)"
	case *f.sample <= 0:
		return "--sample must be positive"
	case *f.orderCheck < 0:
		return "--order-check must be positive: the records to judge in both orders"
	case *f.group < 0:
		return "--judge-group must be positive: the response groups to judge"
	case *f.group > 0 && *f.orderCheck > 0:
		return "--judge-group asks each group in both orders itself; leave out --order-check"
	case *f.passageTokens < rejudge.MinJudgePassageTokens:
		return fmt.Sprintf("--judge-passage-tokens %d is below %d: the judge would see too little of a passage to grade against", *f.passageTokens, rejudge.MinJudgePassageTokens)
	case *f.pricePrompt < 0 || *f.priceCompletion < 0 || *f.priceCached < 0 || *f.maxCost < 0 || *f.temperature < 0 || *f.repairs < 0:
		return "prices, --max-cost-usd, --temperature and --repairs are not negative"
	}
	if _, err := rejudge.ParseLayout(*f.layout); err != nil {
		return "--judge-layout: " + err.Error()
	}
	if _, err := llm.ParseSeed(*f.judgeSeed); err != nil {
		return "--judge-seed: " + err.Error()
	}
	if err := llm.CheckEndpointKind(*f.endpointKind); err != nil {
		return "--endpoint-kind: " + err.Error()
	}
	return ""
}

// defaultRejudgeCache is the response cache rejudge keeps when --cache is
// not given: under the user's cache directory, so that a rejudge run from
// anywhere finds the answers of the last one and leaves no file in the
// current directory.
func defaultRejudgeCache(getenv func(string) string) string {
	dir := getenv("XDG_CACHE_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".cache")
		}
	}
	if dir == "" {
		return "rejudge-cache.db"
	}
	return filepath.Join(dir, "rubricforge", "rejudge-cache.db")
}

func (f *rejudgeFlags) config(e env) rejudge.Config {
	judgeSeed, _ := llm.ParseSeed(*f.judgeSeed) // checked by check
	layout, _ := rejudge.ParseLayout(*f.layout) // checked by check
	key := ""
	if *f.keyEnv != "" {
		key = e.getenv(*f.keyEnv)
	}
	return rejudge.Config{
		BaseURL: *f.baseURL, APIKey: key, Model: *f.model, Sample: *f.sample, Seed: *f.seed, CachePath: *f.cache,
		Price:      llm.Price{PromptPerMTok: *f.pricePrompt, CachedPromptPerMTok: *f.priceCached, CompletionPerMTok: *f.priceCompletion},
		Layout:     layout,
		MaxCostUSD: *f.maxCost, PromptsDir: *f.promptsDir, Temperature: *f.temperature, MaxTokens: *f.maxTokens,
		Repairs: *f.repairs, LegacyMaxTokens: *f.legacy, Concurrency: *f.concurrency, AttemptTimeout: *f.timeout,
		MaxAttempts: *f.maxAttempts, Logger: logger(e.stderr), Tool: "validate " + version,
		Prices: f.prices, OrderCheck: *f.orderCheck, JudgePassageTokens: *f.passageTokens, Group: *f.group,
		JudgeSeed: judgeSeed, EndpointKind: *f.endpointKind,
	}
}
