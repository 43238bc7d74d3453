package audit

import (
	"encoding/xml"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

// TestHTMLSelfContained: the page loads nothing from elsewhere, holds one
// well-formed inline SVG chart per figure, lists every listed violation,
// and escapes what the corpus holds.
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()
	recs[30].ID += `<script>alert(1)</script>` // a record with a violation
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 16)
	rep := auditPath(t, Options{List: -1}, dir)
	page := string(render(t, rep.WriteHTML))

	outside := regexp.MustCompile(`(?i)<script|<link|<iframe|<img|src=|@import|url\(|https?://`)
	for _, m := range outside.FindAllStringIndex(page, -1) {
		if s := page[m[0]:]; strings.HasPrefix(s, "http://www.w3.org/2000/svg") || strings.HasPrefix(s, "url(#") {
			continue // the SVG namespace name, or a pattern of the page itself: not a fetch
		}
		t.Errorf("the page refers outside itself: %q", page[max(0, m[0]-40):min(len(page), m[1]+40)])
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)") {
		t.Error("a record id holding markup is not escaped")
	}

	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	// validity by type and with intervals, items per record for each style,
	// pass rates, rollout lengths; discrimination: edges, AUROCs, kinds by
	// type, records with kinds
	if want := 2 + len(rep.Counts) + 2 + 4; len(svgs) != want {
		t.Errorf("%d charts, want %d", len(svgs), want)
	}
	for i, svg := range svgs {
		d := xml.NewDecoder(strings.NewReader(svg))
		bars := 0
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chart %d is not well-formed SVG: %v\n%s", i, err, svg)
			}
			if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "rect" || se.Name.Local == "circle") {
				bars++
			}
		}
		if bars == 0 {
			t.Errorf("chart %d has no bars", i)
		}
	}
	for _, label := range []string{"Validity by type", "Validity with 95% intervals", "Items per record", "Pass rate per record", "Rollout length"} {
		if !strings.Contains(page, label) {
			t.Errorf("no chart %q", label)
		}
	}
	for _, v := range rep.Structure.Listed {
		if !strings.Contains(page, ">"+escapeHTML(v.RecordID)+"<") {
			t.Errorf("violation of %s by %s is not in the table", v.Rule, v.RecordID)
		}
	}
	for _, typ := range []string{schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer, schema.TypeFactual, schema.TypeProcess} {
		if !strings.Contains(page, ">"+typ+"<") {
			t.Errorf("validity table lacks %s", typ)
		}
	}
}

func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestReportsHaveNoFormatErrors renders the text and HTML reports of every
// kind of input (a math run, a grounded run, a corpus of both, the exports
// a verl or jsonl audit reads, records with and without usage) and fails on
// a format verb applied to the wrong kind of value ("%!f(*float64=...)").
func TestReportsHaveNoFormatErrors(t *testing.T) {
	t.Parallel()
	grounded := []schema.Record{groundedRecord(1, 2), groundedRecord(2, 1)}
	for i := range grounded {
		grounded[i].Usage = schema.Usage{Requests: 7, CachedRequests: 1, PromptTokens: 900, CompletionTokens: 300, CostUSD: 0.0125}
	}
	math := corpusfix.Records()
	for i := range math {
		math[i].Usage = schema.Usage{Requests: 5, PromptTokens: 500, CompletionTokens: 200, CostUSD: 0.003}
	}
	mathRun := filepath.Join(t.TempDir(), "math")
	corpusfix.WriteRun(t, mathRun, math, 16)
	groundedRunDir := groundedRun(t, grounded)
	mixed := filepath.Join(t.TempDir(), "mixed")
	corpusfix.WriteRun(t, mixed, append(slices.Clone(math[:10]), grounded...), 4)
	verl := filepath.Join(t.TempDir(), "verl")
	writeVerlExport(t, verl, math[:10], false)
	jsonl := filepath.Join(t.TempDir(), "jsonl")
	writeJSONLExport(t, jsonl, grounded)
	for _, tc := range []struct{ name, path string }{
		{"math run", mathRun}, {"grounded run", groundedRunDir}, {"both kinds", mixed}, {"verl export", verl}, {"jsonl export", jsonl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := auditPath(t, Options{List: -1}, tc.path)
			for format, write := range map[string]func(io.Writer) error{"text": rep.WriteText, "html": rep.WriteHTML, "json": rep.WriteJSON} {
				out := string(render(t, write))
				if i := strings.Index(out, "%!"); i >= 0 {
					t.Errorf("%s report holds a format error: %q", format, out[max(0, i-60):min(len(out), i+60)])
				}
			}
		})
	}
}
