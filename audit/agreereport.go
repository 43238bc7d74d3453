package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/errwriter"
)

// AgreementReport is what `validate rejudge` and `validate agreement`
// print: the stored verdicts against another judge's or people's, in the
// layout of seed 000's Table 6. Every JSON key is always present: the
// sections of the other command (judge, sample and llm for agreement, sheet
// for rejudge) are null.
type AgreementReport struct {
	Tool          string         `json:"tool"`
	Corpus        []string       `json:"corpus"`
	Against       string         `json:"against"` // whose verdicts are compared with the stored ones
	Judge         *JudgeInfo     `json:"judge"`
	Sample        *SampleInfo    `json:"sample"`
	Sheet         *SheetInfo     `json:"sheet"`
	Agreement     *Agreement     `json:"agreement"`
	Disagreements []Disagreement `json:"disagreements"` // the first ones
	LLM           *LLMUsage      `json:"llm"`
	Panel         *PanelRejudge  `json:"panel"`       // rejudge --panel; null otherwise
	OrderCheck    *OrderCheck    `json:"order_check"` // rejudge --order-check; null otherwise
	InputProblems []Problem      `json:"input_problems"`
}

// JudgeInfo names the judge of a rejudge. The endpoint's key is never in it.
type JudgeInfo struct {
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// Template and GroundedTemplate are the content hashes of the
	// judge_batch template (math items) and the grounded_judge_batch
	// template (grounded criteria) it was asked with; each is null when
	// the sample held none of its kind.
	Template         NullString `json:"template"`
	GroundedTemplate NullString `json:"grounded_template"`
}

// writeJudgeLine writes the line naming a judge (who: "judge M", or a
// panel judge's name), its endpoint and the validity templates it was
// asked with; with both kinds the templates go on a line of their own.
func writeJudgeLine(w io.Writer, who, baseURL string, template, grounded NullString) {
	var names []string
	if template != "" {
		names = append(names, "judge_batch template "+string(template))
	}
	if grounded != "" {
		names = append(names, "grounded_judge_batch template "+string(grounded))
	}
	if len(names) < 2 {
		fmt.Fprintln(w, clip(fmt.Sprintf("  %s at %s, %s", who, baseURL, strings.Join(names, ""))))
		return
	}
	fmt.Fprintln(w, clip(fmt.Sprintf("  %s at %s", who, baseURL)))
	fmt.Fprintln(w, clip("    "+strings.Join(names, ", ")))
}

// SampleInfo says what a rejudge drew and judged.
type SampleInfo struct {
	Seed      uint64     `json:"seed"`
	Requested int        `json:"requested"` // --sample; with --order-check, the drawn records' judged items
	Eligible  int64      `json:"eligible"`  // judged items in the corpus
	Drawn     int        `json:"drawn"`
	Records   int        `json:"records"` // records the drawn items belong to: one request each
	Judged    int        `json:"judged"`
	Failed    int        `json:"failed"`  // not judged: the reply never parsed, or the request failed
	Stopped   NullString `json:"stopped"` // why the rejudge ended early; null when it did not
}

// SheetInfo counts the rows of an annotation sheet.
type SheetInfo struct {
	Rows           int `json:"rows"`
	Blank          int `json:"blank"`           // no verdict written
	Missing        int `json:"missing"`         // the item is not in the corpus
	Changed        int `json:"changed"`         // the item's text differs from the sheet's
	StoredUnjudged int `json:"stored_unjudged"` // the corpus holds no verdict to compare with
}

// whyNothing says why none of the sheet's rows could be compared.
func (sh *SheetInfo) whyNothing() string {
	switch {
	case sh.Rows == 0:
		return "the sheet has no rows"
	case sh.Blank == sh.Rows:
		return fmt.Sprintf("all %d rows of the sheet are blank (fill in human_valid with valid or invalid)", sh.Rows)
	case sh.Missing == sh.Rows-sh.Blank:
		return fmt.Sprintf("none of the sheet's %d annotated items is in this corpus; was the sheet drawn from another corpus?", sh.Rows-sh.Blank)
	}
	return fmt.Sprintf("of the sheet's %d rows, %d are blank, %d not in the corpus, %d changed since sampling, %d not judged in the corpus",
		sh.Rows, sh.Blank, sh.Missing, sh.Changed, sh.StoredUnjudged)
}

// Disagreement is an item the two sides judged differently.
type Disagreement struct {
	RecordID string     `json:"record_id"`
	ItemID   int32      `json:"item_id"`
	Type     string     `json:"type"`
	Item     string     `json:"item"`
	Stored   bool       `json:"stored_valid"`
	Other    bool       `json:"other_valid"`
	Reason   NullString `json:"other_reason"` // the other judge's reason; null for people
}

// LLMUsage is what a rejudge cost, from the meter.
type LLMUsage struct {
	Requests     int64 `json:"requests"`
	CacheHits    int64 `json:"cache_hits"`
	Retries      int64 `json:"retries"`
	Failures     int64 `json:"failures"`
	Repairs      int64 `json:"repairs"`
	PromptTokens int64 `json:"prompt_tokens"`
	// CachedPromptTokens are the PromptTokens the server's prefix cache
	// reused (absent when it reported none).
	CachedPromptTokens int64   `json:"cached_prompt_tokens,omitempty"`
	CompletionTokens   int64   `json:"completion_tokens"`
	CostUSD            float64 `json:"cost_usd"`
}

// NullString is a text written as null in JSON when it is empty.
type NullString string

// MarshalJSON writes "" as null.
func (s NullString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// listedDisagreements is how many disagreements a report lists.
const listedDisagreements = 50

// ComparedItem is one item judged by both sides.
type ComparedItem struct {
	RecordID      string
	ItemID        int32
	Type, Text    string
	Stored, Other bool
	Reason        string
}

func NewAgreementReport(in *Input, against string) *AgreementReport {
	return &AgreementReport{Corpus: in.Paths, Against: against, Disagreements: []Disagreement{}, InputProblems: []Problem{}}
}

func (r *AgreementReport) problem(p Problem) { r.InputProblems = append(r.InputProblems, p) }

// finish computes the agreement over pairs.
func (r *AgreementReport) finish(pairs []ComparedItem) {
	verdicts := make([]VerdictPair, len(pairs))
	for i, p := range pairs {
		verdicts[i] = VerdictPair{Type: p.Type, A: p.Stored, B: p.Other}
		if p.Stored != p.Other && len(r.Disagreements) < listedDisagreements {
			r.Disagreements = append(r.Disagreements, Disagreement{p.RecordID, p.ItemID, p.Type, p.Text, p.Stored, p.Other, NullString(p.Reason)})
		}
	}
	other := r.Against
	if i := strings.Index(other, " ("); i > 0 {
		other = other[:i]
	}
	r.Agreement = CompareVerdicts("stored judge", other, verdicts)
}

// WriteJSON writes the report as one indented JSON document.
func (r *AgreementReport) WriteJSON(w io.Writer) error {
	return writeIndentedJSON(w, r)
}

// WriteText writes the report for a person, no wider than Width columns.
func (r *AgreementReport) WriteText(w io.Writer) error {
	ew := errwriter.New(w)
	fmt.Fprintln(ew, clip("corpus: "+strings.Join(r.Corpus, " ")))
	fmt.Fprintln(ew, clip("stored validity verdicts against "+r.Against))
	r.textHow(ew)
	r.textTable(ew)
	r.textPanel(ew)
	r.textOrderCheck(ew)
	r.textDisagreements(ew)
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

func (r *AgreementReport) textHow(w io.Writer) {
	if j := r.Judge; j != nil {
		writeJudgeLine(w, "judge "+j.Model, j.BaseURL, j.Template, j.GroundedTemplate)
	}
	if s := r.Sample; s != nil && r.OrderCheck != nil {
		fmt.Fprintf(w, "  sample: seed %d, %s records drawn for the order check, their %s judged items\n",
			s.Seed, num(int64(s.Records)), num(int64(s.Drawn)))
	} else if s != nil {
		fmt.Fprintf(w, "  sample: seed %d, %s of %s judged items drawn (%s requested) from %s records\n",
			s.Seed, num(int64(s.Drawn)), num(s.Eligible), num(int64(s.Requested)), num(int64(s.Records)))
	}
	if s := r.Sample; s != nil {
		fmt.Fprintf(w, "  %s judged, %s failed\n", num(int64(s.Judged)), num(int64(s.Failed)))
		if s.Stopped != "" {
			indented(w, "stopped early: "+string(s.Stopped))
		}
	}
	if s := r.Sheet; s != nil {
		fmt.Fprintln(w, "  "+s.Summary())
	}
	if u := r.LLM; u != nil {
		writeUsage(w, u)
	}
}

// indented writes s wrapped to Width, each line indented by two spaces.
func indented(w io.Writer, s string) {
	for _, line := range wrap(s, Width-2) {
		fmt.Fprintln(w, "  "+line)
	}
}

func (r *AgreementReport) textTable(w io.Writer) {
	a := r.Agreement
	heading(w, "Agreement on validity (laid out as the SRaR paper's judge-agreement table)")
	t := newTable("metric", "value")
	t.add("items compared", num(a.Items))
	t.add("validity agreement rate", pct(a.Rate))
	t.add("validity Cohen's kappa", fix(a.Kappa, 2)+" ("+a.Scale+")")
	t.add(a.A+": valid", pct(a.AValidRate))
	t.add(a.B+": valid", pct(a.BValidRate))
	t.write(w)
	fmt.Fprintln(w)
	t = newTable("", a.B+": valid", a.B+": invalid")
	t.add(a.A+": valid", num(a.BothValid), num(a.OnlyAValid))
	t.add(a.A+": invalid", num(a.OnlyBValid), num(a.BothInvalid))
	t.write(w)
	if len(a.ByType) > 0 {
		fmt.Fprintln(w)
		t = newTable("type", "items", "agreement", "kappa")
		for _, ta := range a.ByType {
			t.add(ta.Type, num(ta.Items), pct(ta.Rate), fix(ta.Kappa, 2))
		}
		t.write(w)
	}
}

func (r *AgreementReport) textDisagreements(w io.Writer) {
	if len(r.Disagreements) == 0 {
		return
	}
	n := r.Agreement.Items - r.Agreement.Agree
	heading(w, "Disagreements: %s (the first %d listed)", num(n), len(r.Disagreements))
	valid := map[bool]string{true: "valid", false: "invalid"}
	t := newTable("record", "item", "type", "stored", "other", "item text").leftAlign(2, 3, 4, 5)
	for _, d := range r.Disagreements {
		text := d.Item
		if d.Reason != "" {
			text += " [" + string(d.Reason) + "]"
		}
		t.add(d.RecordID, strconv.Itoa(int(d.ItemID)), d.Type, valid[d.Stored], valid[d.Other], text)
	}
	t.write(w)
}

// NothingCompared says, when no item could be compared, why not; "" when
// some were. An agreement over no items is no result, whatever the exit.
func (r *AgreementReport) NothingCompared() string {
	if r.Agreement != nil && r.Agreement.Items > 0 {
		return ""
	}
	why := "no item was compared"
	switch s, sh := r.Sample, r.Sheet; {
	case sh != nil:
		return why + ": " + sh.whyNothing()
	case s != nil && s.Eligible == 0:
		return why + ": the corpus holds no rubric item or grounded criterion with a stored validity verdict to re-judge (was distill run's judge stage on?)"
	case s != nil && s.Stopped != "":
		return why + ": " + string(s.Stopped)
	case s != nil:
		return why + fmt.Sprintf(": none of the %d drawn items could be judged (see the warnings above)", s.Drawn)
	}
	return why
}
