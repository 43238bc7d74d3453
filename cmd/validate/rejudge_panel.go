package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/rejudge"
)

// readPanel reads --panel's file and resolves its judges against the
// command's flags, which are their defaults as a stage's are in a job
// file; each judge's key is read from its api_key_env. It returns the
// problems of the file, each naming the file and the judge.
func (f *rejudgeFlags) readPanel(e env) ([]rejudge.PanelJudge, error) {
	if *f.panel == "" {
		return nil, nil
	}
	judges, err := job.ReadPanel(*f.panel)
	if err != nil {
		return nil, err
	}
	temp := *f.temperature
	defaults := job.Endpoint{BaseURL: *f.baseURL, Model: *f.model, APIKeyEnv: *f.keyEnv, LegacyMaxTokens: *f.legacy}
	sampling := job.Sampling{Temperature: &temp, MaxTokens: *f.maxTokens}
	resolved := make([]job.PanelJudge, len(judges))
	var problems []string
	for i, j := range judges {
		resolved[i] = j.Resolved(defaults, sampling, *f.promptsDir)
		at := fmt.Sprintf("[%d] (%s)", i, resolved[i].Name)
		switch {
		case resolved[i].BaseURL == "":
			problems = append(problems, at+": no base_url (set it here or give --base-url)")
		case resolved[i].Mode != "" && resolved[i].Mode != "online":
			problems = append(problems, fmt.Sprintf("%s: request_mode %q: rejudge sends online requests only", at, resolved[i].Mode))
		case j.TopP != nil:
			problems = append(problems, at+": top_p: rejudge does not send it (set temperature instead)")
		}
	}
	problems = append(problems, job.CheckPanel("", "--model", resolved)...)
	if len(problems) > 0 {
		return nil, &job.UsageError{File: *f.panel, Kind: job.PanelFile, Problems: problems}
	}
	out := make([]rejudge.PanelJudge, len(resolved))
	for i, j := range resolved {
		key := ""
		if j.APIKeyEnv != "" {
			key = e.getenv(j.APIKeyEnv)
		}
		out[i] = rejudge.PanelJudge{Name: j.Name, BaseURL: j.BaseURL, APIKey: key, Model: j.Model, PromptsDir: j.PromptsDir,
			Temperature: j.Temperature, MaxTokens: j.MaxTokens, LegacyMaxTokens: j.LegacyMaxTokens, EndpointKind: j.Kind}
	}
	return out, nil
}

// priceFlags is the repeatable --price MODEL=PROMPT,COMPLETION.
type priceFlags map[string]llm.Price

func (p priceFlags) String() string {
	var out []string
	for _, m := range slices.Sorted(maps.Keys(p)) {
		out = append(out, fmt.Sprintf("%s=%g,%g", m, p[m].PromptPerMTok, p[m].CompletionPerMTok))
	}
	return strings.Join(out, " ")
}

func (p priceFlags) Set(v string) error {
	model, prices, ok := strings.Cut(v, "=")
	prompt, completion, ok2 := strings.Cut(prices, ",")
	if !ok || !ok2 || model == "" {
		return fmt.Errorf("%q: want MODEL=PROMPT,COMPLETION in USD per million tokens, e.g. gpt-4.1-mini=0.40,1.60", v)
	}
	pp, err1 := strconv.ParseFloat(prompt, 64)
	pc, err2 := strconv.ParseFloat(completion, 64)
	if err1 != nil || err2 != nil || !finiteNonNegative(pp) || !finiteNonNegative(pc) {
		return fmt.Errorf("%q: the prices must be finite numbers, not negative", v)
	}
	p[model] = llm.Price{PromptPerMTok: pp, CompletionPerMTok: pc}
	return nil
}

func finiteNonNegative(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// unpriced lists the judges' models that have no price, when a budget
// needs one for each.
func (f *rejudgeFlags) unpriced(panel []rejudge.PanelJudge) []string {
	if *f.pricePrompt != 0 || *f.priceCompletion != 0 {
		return nil
	}
	models := []string{*f.model}
	if len(panel) > 0 {
		models = models[:0]
		for _, j := range panel {
			models = append(models, j.Model)
		}
	}
	var out []string
	for _, m := range models {
		if p, ok := f.prices[m]; !ok || (p.PromptPerMTok == 0 && p.CompletionPerMTok == 0) {
			out = append(out, m)
		}
	}
	return out
}
