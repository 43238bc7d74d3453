package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/cmd/rewardd/internal/server"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// elicitFlags are the flags of elicitation.
func (o *options) elicitFlags(fs *flag.FlagSet) {
	e := &o.live.elicit
	fs.BoolVar(&o.live.elicitOn, "elicit", false, "elicit new criteria (OnlineRubrics' pairwise elicitation): after a problem's group, its best and worst responses and the corpus's stored rollout go to an extractor (--elicit-model at the judge's endpoint); a criterion the validity judge finds valid is measured over the next groups and joins the live rubric when corr > alpha; needs --state-dir; off by default")
	fs.Float64Var(&e.MaxCost, "elicit-max-cost", 0, "USD elicitation may spend in all, across restarts (the state log keeps the spending), priced by --elicit-price; 0: no bound (e.g. --elicit-max-cost 20)")
	fs.StringVar(&o.live.elicitPrice, "elicit-price", "", "`PROMPT,COMPLETION` USD per million tokens of the extractor and validity judge's requests, for --elicit-max-cost (e.g. --elicit-price 0.4,1.6)")
	fs.StringVar(&e.Model, "elicit-model", "", "the extractor's model at --judge-base-url; empty: --judge-model (e.g. --elicit-model Qwen/Qwen3-235B-A22B)")
	fs.IntVar(&e.Every, "elicit-every", 0, "groups of a problem between two of its elicitations; 0: --stats-window (e.g. --elicit-every 8)")
	fs.IntVar(&e.AdmitGroups, "elicit-admit-groups", 4, "groups an elicited criterion is measured over before it is admitted (corr > alpha, its satisfaction varying) or dropped (e.g. --elicit-admit-groups 8)")
	fs.IntVar(&e.MaxPerProblem, "elicit-max-per-problem", 5, "elicited criteria admitted into a problem's rubric at most (e.g. --elicit-max-per-problem 3)")
}

// checkElicit reports the elicitation flags' problems.
func (o *options) checkElicit() []error {
	l := &o.live
	if !l.elicitOn {
		return nil
	}
	var errs []error
	if o.judgePanel != "" && o.judgeURL == "" {
		errs = append(errs, errors.New("--elicit asks the extractor at --judge-base-url: give it with --judge-panel"))
	}
	if l.elicit.Model == "" {
		l.elicit.Model = o.judgeModel
	}
	if l.elicit.Model == "" {
		errs = append(errs, errors.New("--elicit needs --elicit-model or --judge-model"))
	}
	if l.elicit.Every == 0 {
		l.elicit.Every = l.set.Window
	}
	if l.elicit.MaxCost < 0 || l.elicit.Every < 1 {
		errs = append(errs, errors.New("--elicit-max-cost must not be negative and --elicit-every must be positive"))
	}
	if l.elicit.MaxCost > 0 && l.elicitPrice == "" {
		errs = append(errs, errors.New("--elicit-max-cost needs --elicit-price PROMPT,COMPLETION (USD per million tokens) to price the requests"))
	}
	if _, err := parsePrice(l.elicitPrice); err != nil {
		errs = append(errs, fmt.Errorf("--elicit-price: %w", err))
	}
	return errs
}

// parsePrice reads "PROMPT,COMPLETION"; "" is free.
func parsePrice(s string) (llm.Price, error) {
	if s == "" {
		return llm.Price{}, nil
	}
	a, b, ok := strings.Cut(s, ",")
	p, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	c, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if !ok || err1 != nil || err2 != nil || p < 0 || c < 0 {
		return llm.Price{}, fmt.Errorf("%q is not PROMPT,COMPLETION, two USD prices per million tokens (e.g. 0.4,1.6)", s)
	}
	return llm.Price{PromptPerMTok: p, CompletionPerMTok: c}, nil
}

// elicitOptions builds elicitation's client, its meter within what the
// budget has left, and the corpus's stored rollouts; nil without --elicit.
func (o *options) elicitOptions(apiKey string, responses *cache.Cache, spent float64, log *slog.Logger) (*server.ElicitOptions, func(), error) {
	if !o.live.elicitOn {
		return nil, func() {}, nil
	}
	e := o.live.elicit
	price, _ := parsePrice(o.live.elicitPrice)
	budget := llm.Budget{}
	if e.MaxCost > 0 {
		budget.MaxCostUSD = max(e.MaxCost-spent, 1e-12)
	}
	e.Meter = llm.NewMeter(map[string]llm.Price{e.Model: price, o.judgeModel: price}, budget)
	client, err := llm.NewClient(llm.Endpoint{BaseURL: o.judgeURL, APIKey: apiKey}, llm.Options{
		MaxInFlight: 4, AttemptTimeout: o.attemptTimeout, MaxAttempts: o.maxAttempts, LegacyMaxTokens: o.legacyMaxTokens, Logger: log,
	}, responses, e.Meter)
	if err != nil {
		return nil, nil, err
	}
	e.Client, e.ValidityModel = client, o.judgeModel
	if o.corpus != "" {
		refs, err := server.LoadReferences(o.corpus)
		if err != nil {
			client.Close()
			return nil, nil, fmt.Errorf("--elicit: reading the corpus's stored rollouts: %w", err)
		}
		e.References = refs
		log.Info("elicitation", "model", e.Model, "stored_rollouts", len(refs), "max_cost_usd", e.MaxCost, "spent_usd", spent)
	}
	return &e, client.Close, nil
}
