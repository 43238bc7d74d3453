// Command benchprefix measures what a judge server's prefix cache can
// share of the judge requests, in each judge layout, from outside: the
// built bin/distill and bin/rewardd against the SIMULATED endpoint (not a
// model) in this process, which records every prompt (its unshareable
// characters: its length minus its longest common prefix with any earlier
// request) and models a prefix cache (vLLM's 16-token blocks) that reports
// the prompt tokens it reused.
//
// It reports, for the demo corpora (examples/demo.yaml and
// examples/demo-grounded.yaml, run with --n 16 and --n 32):
//
//   - distill run's empirical stage in the paper and the cache layout: the
//     unshareable characters per judged response beyond the response's own
//     length (over every request, and over those after each record's or
//     question's first), the uncached and cached prompt tokens per judged
//     response, and their prompt cost per 1,000 judged responses at a hosted
//     provider's price with a cached rate (-price);
//   - rewardd in both layouts: one /v1/score_group of 8 of a problem's
//     rollouts (a question's answers) after a warm-up group of 8 others, the
//     same figures per judged response of the measured groups;
//   - group judging (distill run --judge-group, rewardd --judge-group): the
//     judge requests per group (a record's rollouts, a question's answers,
//     a /v1/score_group of 8) and the prompt tokens and cost per judged
//     response, against one request per response in the cache layout;
//   - rewardd's warm-first sending against --judge-warm-first=false at a
//     judge latency of -latency: the p50 and p99 time of a /v1/score_group of
//     8 responses and the uncached prompt tokens per judged response.
//
// Usage:
//
//	make build && go run ./internal/bench/prefix
//	go run ./internal/bench/prefix -groups 20 -latency 200ms -keep
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

type options struct {
	bin, dir, examples string
	keep               bool
	groups             int
	latency            time.Duration
	// price is a hosted provider's price in USD per million prompt tokens
	// and per million cached prompt tokens.
	price, cachedPrice float64
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := &options{}
	fs := flag.NewFlagSet("benchprefix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the built distill and rewardd (make build)")
	fs.StringVar(&o.examples, "examples", "examples", "directory holding demo.yaml, demo-grounded.yaml and problems.jsonl")
	fs.StringVar(&o.dir, "dir", "", "work directory (default: a new temporary directory, removed at the end unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (run directories, logs)")
	fs.IntVar(&o.groups, "groups", 12, "problems (questions) whose groups rewardd scores, at most (e.g. -groups 40)")
	fs.DurationVar(&o.latency, "latency", 200*time.Millisecond, "the simulated judge's mean latency for the warm-first measurement (e.g. -latency 500ms)")
	fs.Float64Var(&o.price, "price", 0.40, "a hosted judge's price in USD per million prompt tokens (gpt-4.1-mini's list price by default)")
	fs.Float64Var(&o.cachedPrice, "cached-price", 0.10, "its price in USD per million cached prompt tokens")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	dir := o.dir
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(stderr, "benchprefix:", err)
			return 1
		}
	} else {
		d, err := os.MkdirTemp("", "benchprefix-")
		if err != nil {
			fmt.Fprintln(stderr, "benchprefix:", err)
			return 1
		}
		dir = d
		if !o.keep {
			defer func() { _ = os.RemoveAll(dir) }() // a temporary work directory: nothing to keep
		}
	}
	if err := measure(ctx, o, dir, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "benchprefix:", err)
		return 1
	}
	return 0
}

// styleOf is one demo corpus: its job file, the kind of its judged
// requests and the name of their response's block.
type styleOf struct {
	name, config string
	kind         sim.Kind
	block        string
	n            string // rollouts per problem (answers per question): enough for two groups of 8 distinct ones
}

func measure(ctx context.Context, o *options, dir string, stdout, stderr io.Writer) error {
	answers, err := sim.LoadAnswers(filepath.Join(o.examples, "problems.jsonl"))
	if err != nil {
		return err
	}
	styles := []styleOf{
		{"math", "demo.yaml", sim.KindSatisfy, "solution", "16"},
		{"grounded", "demo-grounded.yaml", sim.KindScoreGrounded, "response", "32"},
	}
	fmt.Fprintf(stdout, "judge prompts against the SIMULATED endpoint's prefix cache (16-token blocks); prompt cost at $%.2f per M prompt tokens, $%.2f per M cached\n", o.price, o.cachedPrice)
	fmt.Fprintln(stdout, "unshareable: characters of a request no earlier request began with, beyond its response's own length; warm: requests after their group's first")
	for _, st := range styles {
		var corpusDir string
		var cacheLayout figures // distill run in the cache layout, one request per response
		for _, layout := range []string{"paper", "cache"} {
			rec := &sim.PromptRecorder{}
			_, url, stop, err := sim.Start(sim.Config{Answers: answers, Seed: 1, Prompts: rec, PrefixCache: sim.PrefixCache{On: true}})
			if err != nil {
				return err
			}
			out := filepath.Join(dir, st.name+"-"+layout)
			if err := os.RemoveAll(out); err != nil { // a fresh run: one resumed would send nothing
				return err
			}
			err = runCmd(ctx, filepath.Join(o.bin, "distill"), filepath.Join(dir, st.name+"-"+layout+".log"),
				"run", "--config", filepath.Join(o.examples, st.config), "--base-url", url, "--out", out, "--judge-layout", layout, "--n", st.n)
			stop()
			if err != nil {
				return fmt.Errorf("distill run %s (%s layout): %w", st.name, layout, err)
			}
			f := judged(rec.Prompts(), st.kind, st.block, groupOf(st.name), nil)
			fmt.Fprintf(stdout, "distill run %-8s %-5s layout: %s\n", st.name, layout, f.line(o))
			corpusDir = out
			cacheLayout = f
		}
		dg, records, err := distillGroup(ctx, o, dir, st, answers)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "distill run %-8s group judging: %s\n", st.name, dg.line(o, records, cacheLayout))
		groups, err := demoGroups(corpusDir, st.name, o.groups)
		if err != nil {
			return err
		}
		var alone figures // rewardd in the cache layout, one request per response
		for _, layout := range []string{"paper", "cache"} {
			f, _, err := rewarddGroups(ctx, o, dir, st, corpusDir, layout, 0, true, groups, true)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "rewardd     %-8s %-5s layout: %s\n", st.name, layout, f.line(o))
			alone = f
		}
		run, err := runRewardd(ctx, o, dir, st, corpusDir, "cache", 0, true, groups, true, "--judge-model", "simulated", "--judge-group")
		if err != nil {
			return err
		}
		g := groupJudged(run.recs, st.block, run.measured)
		fmt.Fprintf(stdout, "rewardd     %-8s group judging: %s\n", st.name, g.line(o, len(groups), alone))
		if err := agreement(ctx, o, dir, st, corpusDir, groups, stdout); err != nil {
			return err
		}
		if st.name != "math" {
			continue
		}
		for _, warm := range []bool{false, true} {
			f, times, err := rewarddGroups(ctx, o, dir, st, corpusDir, "cache", o.latency, warm, groups, false)
			if err != nil {
				return err
			}
			name := "at once   "
			if warm {
				name = "warm-first"
			}
			fmt.Fprintf(stdout, "rewardd     %s judge at %s: /v1/score_group of 8 p50 %s p99 %s; %.0f uncached + %.0f cached prompt tokens per judged response\n",
				name, o.latency, quantile(times, 0.5).Round(time.Millisecond), quantile(times, 0.99).Round(time.Millisecond), f.uncached, f.cached)
		}
	}
	return nil
}

// distillGroup runs distill run on st's demo corpus in the cache layout
// with --judge-group against a fresh simulated endpoint, and measures its
// empirical stage's judge requests; records is the number of records (or
// questions) they judged.
func distillGroup(ctx context.Context, o *options, dir string, st styleOf, answers map[string]string) (groupFigures, int, error) {
	rec := &sim.PromptRecorder{}
	_, url, stop, err := sim.Start(sim.Config{Answers: answers, Seed: 1, Prompts: rec, PrefixCache: sim.PrefixCache{On: true}})
	if err != nil {
		return groupFigures{}, 0, err
	}
	out := filepath.Join(dir, st.name+"-group")
	if err := os.RemoveAll(out); err != nil {
		stop()
		return groupFigures{}, 0, err
	}
	err = runCmd(ctx, filepath.Join(o.bin, "distill"), filepath.Join(dir, st.name+"-group.log"),
		"run", "--config", filepath.Join(o.examples, st.config), "--base-url", url, "--out", out, "--judge-layout", "cache", "--judge-group", "--n", st.n)
	stop()
	if err != nil {
		return groupFigures{}, 0, fmt.Errorf("distill run %s (group judging): %w", st.name, err)
	}
	records := map[string]bool{}
	for _, r := range rec.Prompts() {
		if r.Kind == sim.KindSatisfyGroup || r.Kind == sim.KindScoreGroundedGroup {
			records[groupOf(st.name)(r.Prompt)] = true
		}
	}
	return groupJudged(rec.Prompts(), st.block, nil), len(records), nil
}

// groupFigures are the figures of group judging's requests: requests,
// the responses they judged, and prompt tokens per judged response.
type groupFigures struct {
	requests, responses int
	uncached, cached    float64 // prompt tokens per judged response
}

// line compares group judging's figures, over groups groups, with one
// request per response's (alone).
func (g groupFigures) line(o *options, groups int, alone figures) string {
	cost := func(uncached, cached float64) float64 { return 1000 * (uncached*o.price + cached*o.cachedPrice) / 1e6 }
	return fmt.Sprintf("%.1f judge requests per group of %.1f responses (one per response: %.1f); prompt tokens per judged response %.0f uncached + %.0f cached (one per response: %.0f + %.0f); $%.4f per 1,000 responses (one per response: $%.4f)",
		float64(g.requests)/float64(max(groups, 1)), float64(g.responses)/float64(max(groups, 1)), float64(alone.requests)/float64(max(groups, 1)),
		g.uncached, g.cached, alone.uncached, alone.cached, cost(g.uncached, g.cached), cost(alone.uncached, alone.cached))
}

// reAnyBlock finds the blocks of a judge prompt: "[KIND ID]" lines.
var reAnyBlock = regexp.MustCompile(`\n\[(?:solution|response) ([0-9a-f]{16})\]\n`)

// groupJudged measures the judge requests of recs that show a response
// (only those showing one in only, by block id, when only is not nil),
// group requests or single ones: how many, how many responses they
// judged, and their prompt tokens per judged response.
func groupJudged(recs []sim.RecordedPrompt, block string, only map[string]bool) groupFigures {
	var g groupFigures
	for _, r := range recs {
		if r.Repair {
			continue
		}
		n := 0
		for _, m := range reAnyBlock.FindAllStringSubmatch(r.Prompt, -1) {
			if only == nil || only[m[1]] {
				n++
			}
		}
		if n == 0 || !strings.Contains(r.Prompt, "\n["+block+" ") {
			continue
		}
		g.requests++
		g.responses += n
		g.uncached += float64(r.PromptTokens - r.CachedTokens)
		g.cached += float64(r.CachedTokens)
	}
	if g.responses > 0 {
		g.uncached, g.cached = g.uncached/float64(g.responses), g.cached/float64(g.responses)
	}
	return g
}

// figures are the per judged response figures of a set of judge requests.
type figures struct {
	requests                 int
	unshared, unsharedWarm   float64 // beyond the response's own length
	responseChars            float64
	uncached, cached         float64 // prompt tokens
	uncachedWarm, cachedWarm float64
	warmRequests             int
}

func (f figures) line(o *options) string {
	cost := func(uncached, cached float64) float64 { return 1000 * (uncached*o.price + cached*o.cachedPrice) / 1e6 }
	return fmt.Sprintf("%d judged responses of %.0f characters: unshareable +%.0f (warm +%.0f); prompt tokens per response %.0f uncached + %.0f cached (warm %.0f + %.0f); $%.4f per 1,000 responses (without the cache $%.4f)",
		f.requests, f.responseChars, f.unshared, f.unsharedWarm, f.uncached, f.cached, f.uncachedWarm, f.cachedWarm,
		cost(f.uncached, f.cached), cost(f.uncached+f.cached, 0))
}

// groupOf names the group a judge prompt belongs to: the prompt's problem
// (math) or passage and question (grounded), whose requests share a prefix.
func groupOf(style string) func(prompt string) string {
	open, close := "<problem>", "</problem>"
	if style == "grounded" {
		open, close = "<source_passage>", "</question>"
	}
	return func(p string) string {
		i, j := strings.Index(p, open), strings.Index(p, close)
		if i < 0 || j < i {
			return ""
		}
		return p[i:j]
	}
}

var reStepTag = regexp.MustCompile(`<step n="\d+">\n`)

// judged measures the judge requests of kind in recs (only those showing a
// response in only, by block id, when only is not nil).
func judged(recs []sim.RecordedPrompt, kind sim.Kind, block string, group func(string) string, only map[string]bool) figures {
	reBlock := regexp.MustCompile(`\n\[` + block + ` ([0-9a-f]{16})\]\n`)
	seen := map[string]bool{}
	var f figures
	for _, r := range recs {
		if r.Kind != kind || r.Repair {
			continue
		}
		m := reBlock.FindStringSubmatchIndex(r.Prompt)
		if m == nil {
			continue
		}
		id := r.Prompt[m[2]:m[3]]
		if only != nil && !only[id] {
			continue
		}
		end := strings.Index(r.Prompt[m[1]:], "\n[end of "+block+" "+id+"]")
		if end < 0 {
			continue
		}
		shown := reStepTag.ReplaceAllString(r.Prompt[m[1]:m[1]+end], "")
		own := len(shown) - 3*strings.Count(shown, "&lt;") - 4*strings.Count(shown, "&#91;")
		beyond := float64(r.Unshared - own)
		f.requests++
		f.unshared += beyond
		f.responseChars += float64(own)
		f.uncached += float64(r.PromptTokens - r.CachedTokens)
		f.cached += float64(r.CachedTokens)
		if g := group(r.Prompt); seen[g] {
			f.warmRequests++
			f.unsharedWarm += beyond
			f.uncachedWarm += float64(r.PromptTokens - r.CachedTokens)
			f.cachedWarm += float64(r.CachedTokens)
		} else {
			seen[g] = true
		}
	}
	if n := float64(f.requests); n > 0 {
		f.unshared, f.responseChars, f.uncached, f.cached = f.unshared/n, f.responseChars/n, f.uncached/n, f.cached/n
	}
	if n := float64(f.warmRequests); n > 0 {
		f.unsharedWarm, f.uncachedWarm, f.cachedWarm = f.unsharedWarm/n, f.uncachedWarm/n, f.cachedWarm/n
	}
	return f
}

// group is a problem's (a question's) label id and its responses: 16
// rollouts (answers), a warm-up group and a measured group.
type group struct {
	id        string
	responses []string
}

// demoGroups reads up to n groups of 16 responses from a demo run: a
// warm-up group of 8 distinct responses and a measured group of 8 others,
// each of the measured ones a text found nowhere else in the run (a
// request is found by its block's id, which is its response text's).
func demoGroups(dir, style string, n int) ([]group, error) {
	type cand struct {
		id    string
		texts []string
	}
	var cands []cand
	count := map[string]int{}
	err := corpus.ReadAll(dir, func(r *schema.Record) error {
		if style == "grounded" {
			labs := schema.QuestionLabels(r)
			for k, q := range r.Grounded.Questions {
				var texts []string
				for _, a := range q.Answers {
					texts = append(texts, a.Text)
					count[a.Text]++
				}
				if k < len(labs) && labs[k].Question == q.Question {
					cands = append(cands, cand{labs[k].ID, texts})
				}
			}
			return nil
		}
		var texts []string
		for _, ro := range r.Rollouts {
			texts = append(texts, ro.Text)
			count[ro.Text]++
		}
		cands = append(cands, cand{r.ID, texts})
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []group
	for _, c := range cands {
		var warm, measured []string
		taken := map[string]bool{}
		for _, t := range c.texts {
			if count[t] == 1 && len(measured) < 8 {
				measured, taken[t] = append(measured, t), true
			}
		}
		for _, t := range c.texts {
			if !taken[t] && len(warm) < 8 {
				warm, taken[t] = append(warm, t), true
			}
		}
		if len(measured) == 8 && len(warm) == 8 {
			out = append(out, group{c.id, append(warm, measured...)})
		}
	}
	slices.SortFunc(out, func(a, b group) int { return strings.Compare(a.id, b.id) })
	if len(out) > n {
		out = out[:n]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no problem with 8 responses found nowhere else and 8 others", dir)
	}
	return out, nil
}

// rewarddGroups starts rewardd over the corpus in layout against a fresh
// simulated endpoint at latency, scores each group (with warmUp, first a
// warm-up group of its first 8 responses, then the measured group of the
// next 8; else the measured group alone) and measures the judge requests of
// the measured groups, and the time of each measured /v1/score_group.
func rewarddGroups(ctx context.Context, o *options, dir string, st styleOf, corpusDir, layout string, latency time.Duration, warmFirst bool, groups []group, warmUp bool, judge ...string) (figures, []time.Duration, error) {
	f, times, _, err := rewarddVerdicts(ctx, o, dir, st, corpusDir, layout, latency, warmFirst, groups, warmUp, judge...)
	return f, times, err
}

// agreement scores the measured groups in both layouts with the
// simulated judge, with a noisy one and with a panel of two noisy ones,
// and reports the share of verdicts (satisfaction and step, or score) the
// two layouts give alike; for math with one judge, also the share group
// judging (--judge-group) gives alike with one request per response.
func agreement(ctx context.Context, o *options, dir string, st styleOf, corpusDir string, groups []group, stdout io.Writer) error {
	panel := filepath.Join(dir, "panel.yaml")
	if err := os.WriteFile(panel, []byte("- name: noisy\n  model: noisy\n- name: steady\n  model: steady\n"), 0o644); err != nil {
		return err
	}
	for _, j := range []struct {
		name string
		args []string
	}{
		{"simulated judge", []string{"--judge-model", "simulated"}},
		{"judge flipping 20%", []string{"--judge-model", "noisy"}},
		{"panel (flips 20%, 10%)", []string{"--judge-panel", panel}},
	} {
		var byLayout [2]map[string]string
		for k, layout := range []string{"paper", "cache"} {
			_, _, v, err := rewarddVerdicts(ctx, o, dir, st, corpusDir, layout, 0, true, groups, false, j.args...)
			if err != nil {
				return err
			}
			byLayout[k] = v
		}
		same := alike(byLayout[0], byLayout[1])
		fmt.Fprintf(stdout, "rewardd     %-8s layouts agree: %s, %d of %d verdicts alike\n", st.name, j.name, same, len(byLayout[0]))
		if j.args[0] == "--judge-panel" { // a panel asks each judge one response at a time
			continue
		}
		_, _, grouped, err := rewarddVerdicts(ctx, o, dir, st, corpusDir, "cache", 0, true, groups, false, append(j.args, "--judge-group")...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rewardd     %-8s group judging agrees: %s, %d of %d verdicts alike\n", st.name, j.name, alike(byLayout[1], grouped), len(byLayout[1]))
	}
	return positionBias(ctx, o, dir, st, corpusDir, groups, stdout)
}

// positionBias measures group judging's position bias as the verdicts it
// changes against one request per response, by the half of the group
// request a response was shown in, for the simulated judge and for one
// with a planted bias (late_lenience: more lenient on later positions), so
// that the measure is seen to find one.
func positionBias(ctx context.Context, o *options, dir string, st styleOf, corpusDir string, groups []group, stdout io.Writer) error {
	for _, model := range []string{"simulated", "late"} {
		alone, err := runRewardd(ctx, o, dir, st, corpusDir, "cache", 0, true, groups, false, "--judge-model", model)
		if err != nil {
			return err
		}
		together, err := runRewardd(ctx, o, dir, st, corpusDir, "cache", 0, true, groups, false, "--judge-model", model, "--judge-group")
		if err != nil {
			return err
		}
		var changed, total [2]int
		for _, g := range groups {
			at := make([]int, 8)
			for k, i := range prompts.GroupOrder(g.responses[8:16]) {
				at[i] = k
			}
			for i := range 8 {
				half := at[i] * 2 / 8
				prefix := fmt.Sprintf("%s/%d/", g.id, i)
				for key, v := range alone.verdicts {
					if !strings.HasPrefix(key, prefix) {
						continue
					}
					total[half]++
					if together.verdicts[key] != v {
						changed[half]++
					}
				}
			}
		}
		name := "the simulated judge"
		if model == "late" {
			name = fmt.Sprintf("a judge lenient on later positions (simulated late_lenience=%g)", judgeProfiles["late"].LateLenience)
		}
		fmt.Fprintf(stdout, "rewardd     %-8s group judging's position bias, %s: verdicts changed %s in the first half of a request, %s in the second\n",
			st.name, name, share(changed[0], total[0]), share(changed[1], total[1]))
	}
	return nil
}

// share is k of n as a percentage with its 95% Wilson interval.
func share(k, n int) string {
	iv, ok := judgestats.Wilson(int64(k), int64(n), 1.96)
	if !ok {
		return "(none judged)"
	}
	return fmt.Sprintf("%d of %d, %.1f%% (%.1f-%.1f%%)", k, n, 100*float64(k)/float64(n), 100*iv.Low, 100*iv.High)
}

// alike counts the verdicts of a that b gives alike.
func alike(a, b map[string]string) int {
	n := 0
	for key, v := range a {
		if b[key] == v {
			n++
		}
	}
	return n
}

// judgeProfiles are the simulated judges the agreement between layouts is
// measured with: one that turns 20% of its verdicts over, and a panel of it
// and one that turns 10% over; and one with a planted position bias in
// group requests, for the measure of group judging's.
var judgeProfiles = map[string]sim.JudgeProfile{"noisy": {Flip: 0.2}, "steady": {Flip: 0.1}, "late": {LateLenience: 0.3}}

// rewarddVerdicts is rewarddGroups that also returns every verdict of the
// measured groups, by response and item (judge: the flags naming the
// judge, --judge-model simulated when none).
func rewarddVerdicts(ctx context.Context, o *options, dir string, st styleOf, corpusDir, layout string, latency time.Duration, warmFirst bool, groups []group, warmUp bool, judge ...string) (figures, []time.Duration, map[string]string, error) {
	run, err := runRewardd(ctx, o, dir, st, corpusDir, layout, latency, warmFirst, groups, warmUp, judge...)
	if err != nil {
		return figures{}, nil, nil, err
	}
	return judged(run.recs, st.kind, st.block, groupOf(st.name), run.measured), run.times, run.verdicts, nil
}

// rewarddRun is what runRewardd saw: the judge prompts, the blocks of the
// measured responses, each measured /v1/score_group's time, and the
// verdicts of the measured groups by response and item.
type rewarddRun struct {
	recs     []sim.RecordedPrompt
	measured map[string]bool
	times    []time.Duration
	verdicts map[string]string
}

// runRewardd is rewarddVerdicts before the measure: what rewardd sent the
// judge.
func runRewardd(ctx context.Context, o *options, dir string, st styleOf, corpusDir, layout string, latency time.Duration, warmFirst bool, groups []group, warmUp bool, judge ...string) (rewarddRun, error) {
	if len(judge) == 0 {
		judge = []string{"--judge-model", "simulated"}
	}
	rec := &sim.PromptRecorder{}
	_, url, stopSim, err := sim.Start(sim.Config{Seed: 1, Prompts: rec, PrefixCache: sim.PrefixCache{On: true}, Latency: latency, Judges: judgeProfiles})
	if err != nil {
		return rewarddRun{}, err
	}
	defer stopSim()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := append([]string{"--corpus", corpusDir, "--addr", "127.0.0.1:0", "--judge-base-url", url,
		"--judge-layout", layout, fmt.Sprintf("--judge-warm-first=%v", warmFirst), "--log-level", "warn"}, judge...)
	cmd := exec.CommandContext(ctx, filepath.Join(o.bin, "rewardd"), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return rewarddRun{}, err
	}
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("rewardd-%s-%s-%v-%d.log", st.name, layout, warmFirst, len(judge))))
	if err != nil {
		return rewarddRun{}, err
	}
	defer func() { _ = logf.Close() }() // a log kept for reading: its close error changes no figure
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return rewarddRun{}, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	var base string
	if _, err := fmt.Fscanln(stdout, &base); err != nil {
		return rewarddRun{}, fmt.Errorf("rewardd did not start: %w", err)
	}
	measured := map[string]bool{}
	verdicts := map[string]string{}
	var times []time.Duration
	for _, g := range groups {
		if warmUp {
			if _, _, err := scoreGroup(base, g.id, g.responses[:8]); err != nil {
				return rewarddRun{}, err
			}
		}
		for _, r := range g.responses[8:16] {
			measured[blockID(r)] = true
		}
		took, results, err := scoreGroup(base, g.id, g.responses[8:16])
		if err != nil {
			return rewarddRun{}, err
		}
		for i, r := range results {
			for _, it := range r.Items {
				verdicts[fmt.Sprintf("%s/%d/%d", g.id, i, it.ID)] = fmt.Sprintf("%v/%d", it.Satisfied, it.Step)
			}
			for _, c := range r.Criteria {
				verdicts[fmt.Sprintf("%s/%d/%s", g.id, i, c.ID)] = fmt.Sprint(c.Score)
			}
		}
		times = append(times, took)
	}
	return rewarddRun{rec.Prompts(), measured, times, verdicts}, nil
}

// scoredResult is the part of a /v1/score_group result the agreement
// between layouts compares.
type scoredResult struct {
	Items []struct {
		ID        int32 `json:"id"`
		Satisfied bool  `json:"satisfied"`
		Step      int32 `json:"step"`
	} `json:"items"`
	Criteria []struct {
		ID    string  `json:"id"`
		Score float64 `json:"score"`
	} `json:"criteria"`
}

// scoreGroup posts one /v1/score_group and returns how long it took and
// its results.
func scoreGroup(base, id string, responses []string) (time.Duration, []scoredResult, error) {
	body, _ := json.Marshal(map[string]any{"problem_id": id, "responses": responses})
	start := time.Now()
	resp, err := http.Post(base+"/v1/score_group", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"judge_ok":true`))) {
		err = fmt.Errorf("/v1/score_group of %s: %d %.300s", id, resp.StatusCode, out)
	}
	var ans struct{ Results []scoredResult }
	if err == nil {
		err = json.Unmarshal(out, &ans)
	}
	return took, ans.Results, err
}

// blockID is the id of the block a judge prompt shows response in.
func blockID(response string) string {
	sum := sha256.Sum256([]byte(response))
	return hex.EncodeToString(sum[:8])
}

// quantile is the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)]
}

// runCmd runs name with args, its output in logPath.
func runCmd(ctx context.Context, name, logPath string, args ...string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // the command's log: its close error changes no figure
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 { // some problems failed: the run is still measured
		return nil
	}
	return err
}
