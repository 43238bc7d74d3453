package audit

import (
	"encoding/xml"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestHTMLSelfContained: the page loads nothing from elsewhere, holds one
// well-formed inline SVG chart per figure, lists every listed violation,
// and escapes what the corpus holds.
func TestHTMLSelfContained(t *testing.T) {
	recs := fixtureRecords()
	recs[30].ID += `<script>alert(1)</script>` // a record with a violation
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, recs, 16)
	rep := auditPath(t, Options{List: -1}, dir)
	page := string(render(t, rep.WriteHTML))

	outside := regexp.MustCompile(`(?i)<script|<link|<iframe|<img|src=|@import|url\(|https?://`)
	for _, m := range outside.FindAllStringIndex(page, -1) {
		if s := page[m[0]:]; strings.HasPrefix(s, "http://www.w3.org/2000/svg") {
			continue // the SVG namespace name, not a fetch
		}
		t.Errorf("the page refers outside itself: %q", page[max(0, m[0]-40):min(len(page), m[1]+40)])
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)") {
		t.Error("a record id holding markup is not escaped")
	}

	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	// validity by type, items per record for each style, pass rates, rollout lengths
	if want := 1 + len(rep.Counts) + 2; len(svgs) != want {
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
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
				bars++
			}
		}
		if bars == 0 {
			t.Errorf("chart %d has no bars", i)
		}
	}
	for _, label := range []string{"Validity by type", "Items per record", "Pass rate per record", "Rollout length"} {
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
