package audit

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/errwriter"
)

// GroupReport is what validate rejudge --judge-group prints: a sample of
// response groups (a math record's rollouts, a grounded question's
// closed-book answers), each response judged by one request of its own
// and by one request holding the whole group, the group asked twice, in
// its drawn order and reversed; by judge (and the panel's majority), the
// agreement of group judging with one request per response and the
// group order's flips and position bias. Every JSON key is always
// present; panel is null with one judge.
type GroupReport struct {
	Tool          string       `json:"tool"`
	Corpus        []string     `json:"corpus"`
	Sample        *GroupSample `json:"sample"`
	Judges        []GroupJudge `json:"judges"`
	Panel         *GroupJudge  `json:"panel"`
	LLM           *LLMUsage    `json:"llm"`
	InputProblems []Problem    `json:"input_problems"`
}

// GroupSample says what a group rejudge drew and judged.
type GroupSample struct {
	Seed      uint64     `json:"seed"`
	Requested int        `json:"requested"` // --judge-group
	Eligible  int64      `json:"eligible"`  // groups in the corpus with two responses or more
	Drawn     int        `json:"drawn"`
	Responses int        `json:"responses"` // of the drawn groups
	Judged    int        `json:"judged"`    // groups every judge answered, alone and together, in both orders
	Failed    int        `json:"failed"`    // groups some request failed for (left out of the figures)
	Stopped   NullString `json:"stopped"`   // why it ended early; null when it did not
}

// GroupJudge is one judge's figures (or the panel's, judge "panel"):
// Agreement compares, verdict by verdict (a response's verdict on an item,
// or whether it met a criterion), one request per response (A) with one
// request per group in its drawn order (B); OrderCheck compares the group
// request in its drawn order with the same request reversed, by type, all
// types first, a response's place being its place among the group's.
type GroupJudge struct {
	Judge         string         `json:"judge"`
	Model         string         `json:"model"`
	BaseURL       string         `json:"base_url"`
	Agreement     *Agreement     `json:"agreement"`
	Disagreements []Disagreement `json:"disagreements"` // the first ones
	OrderCheck    []FlipRate     `json:"order_check"`
	LLM           *LLMUsage      `json:"llm"` // null for the panel
}

// GroupVerdict is one verdict of a group rejudge: response Response of
// group Group on item Item (a math item's id, a criterion's position from
// 1), judged alone and in the group request in both orders; Pos is the
// response's place in the drawn order, of N.
type GroupVerdict struct {
	Group, Response         string
	Item                    int32
	Type, Text              string
	Pos, N                  int
	Alone, Forward, Reverse bool
}

// groupAlone and groupTogether name the two sides of a group rejudge's
// agreement.
const (
	groupAlone    = "one request per response"
	groupTogether = "one request per group"
)

// NewGroupJudge computes a judge's figures from its verdicts.
func NewGroupJudge(name, model, baseURL string, verdicts []GroupVerdict, usage *LLMUsage) GroupJudge {
	pairs := make([]VerdictPair, len(verdicts))
	flips := flipCounter{}
	g := GroupJudge{Judge: name, Model: model, BaseURL: baseURL, Disagreements: []Disagreement{}, LLM: usage}
	for i, v := range verdicts {
		pairs[i] = VerdictPair{Type: v.Type, A: v.Alone, B: v.Forward}
		flips.add(v.Type, v.Pos, v.N, v.Forward, v.Reverse)
		if v.Alone != v.Forward && len(g.Disagreements) < listedDisagreements {
			g.Disagreements = append(g.Disagreements, Disagreement{RecordID: v.Group + " " + v.Response, ItemID: v.Item, Type: v.Type,
				Item: v.Text, Stored: v.Alone, Other: v.Forward})
		}
	}
	g.Agreement = CompareVerdicts(groupAlone, groupTogether, pairs)
	g.OrderCheck = flips.rates()
	return g
}

// WriteJSON writes the report as one indented JSON document.
func (r *GroupReport) WriteJSON(w io.Writer) error {
	return writeIndentedJSON(w, r)
}

// WriteText writes the report for a person, no wider than Width columns.
func (r *GroupReport) WriteText(w io.Writer) error {
	ew := errwriter.New(w)
	fmt.Fprintln(ew, clip("corpus: "+strings.Join(r.Corpus, " ")))
	fmt.Fprintln(ew, "satisfaction verdicts: "+groupTogether+" against "+groupAlone)
	if s := r.Sample; s != nil {
		fmt.Fprintf(ew, "  sample: seed %d, %s of %s groups drawn (%s requested), %s responses\n",
			s.Seed, num(int64(s.Drawn)), num(s.Eligible), num(int64(s.Requested)), num(int64(s.Responses)))
		fmt.Fprintf(ew, "  %s groups judged, %s failed\n", num(int64(s.Judged)), num(int64(s.Failed)))
		if s.Stopped != "" {
			indented(ew, "stopped early: "+string(s.Stopped))
		}
	}
	if u := r.LLM; u != nil {
		writeUsage(ew, u)
	}
	for i := range r.Judges {
		r.Judges[i].text(ew)
	}
	if r.Panel != nil {
		r.Panel.text(ew)
	}
	if len(r.InputProblems) > 0 {
		heading(ew, "Input problems: %d (the rest of the corpus was read)", len(r.InputProblems))
		t := newTable("file", "line", "problem").leftAlign(2)
		for _, p := range r.InputProblems {
			t.add(p.File, strconv.FormatInt(p.Line, 10), p.Error)
		}
		t.write(ew)
	}
	return ew.Err()
}

// writeUsage writes what the requests cost.
func writeUsage(w io.Writer, u *LLMUsage) {
	fmt.Fprintf(w, "  requests: %s sent, %s from the cache, %s retries, %s repairs\n",
		num(u.Requests), num(u.CacheHits), num(u.Retries), num(u.Repairs))
	cached := ""
	if u.CachedPromptTokens > 0 {
		cached = " (" + num(u.CachedPromptTokens) + " cached)"
	}
	fmt.Fprintf(w, "  tokens: %s prompt%s + %s completion; cost $%.4f\n", num(u.PromptTokens), cached, num(u.CompletionTokens), u.CostUSD)
}

// text writes one judge's section.
func (g *GroupJudge) text(w io.Writer) {
	a := g.Agreement
	if g.Judge == "panel" {
		heading(w, "Panel (strict majority of the judges; a judge that failed counts against)")
	} else {
		heading(w, "Judge %s", g.Judge)
		fmt.Fprintln(w, clip(fmt.Sprintf("  at %s", g.BaseURL)))
	}
	t := newTable("metric", "value")
	t.add("verdicts compared", num(a.Items))
	t.add("agreement rate", pct(a.Rate))
	t.add("Cohen's kappa", fix(a.Kappa, 2)+" ("+a.Scale+")")
	t.add("satisfied, "+groupAlone, pct(a.AValidRate))
	t.add("satisfied, "+groupTogether, pct(a.BValidRate))
	t.write(w)
	if len(a.ByType) > 1 {
		fmt.Fprintln(w)
		t = newTable("type", "verdicts", "agreement", "kappa")
		for _, ta := range a.ByType {
			t.add(ta.Type, num(ta.Items), pct(ta.Rate), fix(ta.Kappa, 2))
		}
		t.write(w)
	}
	fmt.Fprintln(w)
	indented(w, "order check: the group request in its drawn order against the same request reversed; a flip "+
		"is a verdict that changed; position bias: satisfied only where the response came earlier minus "+
		"only where it came later (95% intervals: Wilson; Agresti-Min for the difference)")
	t = newTable("type", "verdicts", "flips", "flip rate", "95% interval", "position bias", "95% interval")
	for _, f := range g.OrderCheck {
		t.add(f.Type, num(f.Items), num(f.Flips), pct(f.Rate), intervalText(f.Interval), signedPct(f.Bias), signedInterval(f.BiasInterval))
	}
	t.write(w)
	if len(g.Disagreements) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  verdicts that differ: %s (the first %d listed)\n", num(a.Items-a.Agree), len(g.Disagreements))
		sat := map[bool]string{true: "met", false: "not met"}
		t = newTable("response", "item", "type", "alone", "group", "item text").leftAlign(0, 2, 3, 4, 5)
		for _, d := range g.Disagreements {
			t.add(d.RecordID, strconv.Itoa(int(d.ItemID)), d.Type, sat[d.Stored], sat[d.Other], d.Item)
		}
		t.write(w)
	}
}
