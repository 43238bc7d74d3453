package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward/judge"
)

// judgeSpec is one judge rewardd asks: the --judge-* flags' judge, or one
// judge of the --judge-panel file with the flags' settings where it names
// none.
type judgeSpec struct {
	job.PanelJudge
	apiKey string // read from its api_key_env; never logged
}

// judges are the judges rewardd asks: the flags' judge, or the panel
// file's. apiKey is --judge-api-key-env's key, which a panel judge on that
// variable uses too. The error of a panel file names the file and each
// judge's problem.
func (o *options) judges(apiKey string, getenv func(string) string) ([]judgeSpec, error) {
	flags := job.Endpoint{BaseURL: o.judgeURL, Model: o.judgeModel, APIKeyEnv: o.judgeKeyEnv, LegacyMaxTokens: o.legacyMaxTokens, Kind: o.judgeKind}
	sampling := job.Sampling{MaxTokens: o.judgeMaxTokens}
	if o.judgePanel == "" {
		return []judgeSpec{{PanelJudge: job.PanelJudge{}.Resolved(flags, sampling, o.promptsDir), apiKey: apiKey}}, nil
	}
	written, err := job.ReadPanel(o.judgePanel)
	if err != nil {
		return nil, fmt.Errorf("--judge-panel: %w", err)
	}
	panel := make([]job.PanelJudge, len(written))
	for i, p := range written {
		panel[i] = p.Resolved(flags, sampling, o.promptsDir)
	}
	problems := job.CheckPanel("", "--judge-model", panel)
	specs := make([]judgeSpec, len(panel))
	for i, p := range panel {
		problems = append(problems, checkPanelURL(i, p.BaseURL)...)
		specs[i] = judgeSpec{PanelJudge: p, apiKey: apiKey}
		if p.APIKeyEnv == "" || p.APIKeyEnv == o.judgeKeyEnv {
			continue
		}
		if specs[i].apiKey = strings.TrimSpace(getenv(p.APIKeyEnv)); specs[i].apiKey == "" {
			problems = append(problems, fmt.Sprintf("[%d].api_key_env: %s is unset or blank", i, p.APIKeyEnv))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("--judge-panel: %w", &job.UsageError{File: o.judgePanel, Kind: job.PanelFile, Problems: problems})
	}
	return specs, nil
}

// checkPanelURL returns the problems of panel judge i's base URL.
func checkPanelURL(i int, baseURL string) []string {
	if baseURL == "" {
		return []string{fmt.Sprintf("[%d]: no base_url (set base_url here or --judge-base-url)", i)}
	}
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return []string{fmt.Sprintf("[%d].base_url: %q is not an http(s) URL without credentials", i, baseURL)}
	}
	return nil
}

// newJudge builds the judge the server asks: one judge, or a panel of
// them (judge.NewPanel), each with its own client of its endpoint; they
// share the response cache and the meter. closeAll closes the clients.
func (o *options) newJudge(specs []judgeSpec, responses *cache.Cache, meter *llm.Meter, log *slog.Logger) (j *judge.Judge, closeAll func(), err error) {
	seed, _ := llm.ParseSeed(o.judgeSeed) // checked by check
	var clients []*llm.Client
	closeAll = func() {
		for _, c := range clients {
			c.Close()
		}
	}
	members := make([]*judge.Judge, len(specs))
	for i, s := range specs {
		client, err := llm.NewClient(llm.Endpoint{BaseURL: s.BaseURL, APIKey: s.apiKey}, llm.Options{
			MaxInFlight: o.judgeConcurrency, AttemptTimeout: o.attemptTimeout, MaxAttempts: o.maxAttempts,
			LegacyMaxTokens: s.LegacyMaxTokens, Logger: log,
		}, responses, meter)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, client)
		ps, err := prompts.Load(s.PromptsDir)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("judge %s: %w", s.Name, err)
		}
		members[i], err = judge.New(client, ps, judge.Options{Model: s.Model, Name: s.Name, EndpointKind: s.EndpointKind(), Seed: seed,
			Temperature: s.Temperature, TopP: s.TopP, MaxTokens: s.MaxTokens,
			Repairs: repairs(o.judgeRepairs), GroundedRepairs: o.groundedRepairs,
			Concurrency: o.judgeConcurrency, CacheEntries: o.verdictCache, PassageTokens: o.judgePassageTokens})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	if len(members) == 1 {
		return members[0], closeAll, nil
	}
	if j, err = judge.NewPanel(members); err != nil {
		closeAll()
		return nil, nil, err
	}
	return j, closeAll, nil
}

// judgeNames are the judges' names, for the log.
func judgeNames(specs []judgeSpec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ",")
}
