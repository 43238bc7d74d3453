package pipeline

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/prompts"
)

// The fixtures in testdata/passages are Markdown written for these tests:
// code with indentation, a long fenced block, a long table, front matter,
// a byte order mark with CRLF line ends, a heading before a huge
// paragraph, a boilerplate line, and one document under two names.
const passageFixtures = "testdata/passages"

func mdFixture(name string) string { return filepath.Join(passageFixtures, name) }

// normalizedFixture is a fixture's text as the reader documents it: the
// byte order mark dropped, CRLF and CR line ends made LF.
func normalizedFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(mdFixture(name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimPrefix(string(b), "\uFEFF")
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// fixtureUnits reads one fixture as a grounded job's input with passages
// of at most limit characters.
func fixtureUnits(t *testing.T, name string, limit int) []source.Problem {
	t.Helper()
	j := groundedJob(mdFixture(name))
	j.Grounded.PassageChars = limit
	units, bad := readAll(t, j)
	if len(bad) > 0 {
		t.Fatalf("%s: bad input %v", name, bad)
	}
	return units
}

var fenceLine = regexp.MustCompile("^[ \t]*(```|~~~)")

// checkSourceText asserts that the passages are the document's text, byte
// for byte and in order: each passage, less what the cutter declares it
// repeats (a table's header and delimiter rows, a reopened fence's opening
// line at its start, and a closing fence at its end), is the next stretch
// of src, and only white space lies between two passages.
func checkSourceText(t *testing.T, src string, passages []string) {
	t.Helper()
	pos := 0
	for i, p := range passages {
		core, ok := "", false
		for _, c := range declaredCores(p) {
			at := strings.Index(src[pos:], c.core)
			if at < 0 || strings.TrimSpace(src[pos:pos+at]) != "" {
				continue
			}
			if c.repeated != "" && !strings.Contains(src[:pos+at], c.repeated) {
				continue // a declared repeat is a repeat of what came before
			}
			core, ok = c.core, true
			pos += at + len(c.core)
			break
		}
		if !ok {
			t.Fatalf("passage %d is not the next stretch of the document's text:\n%q\nthe text from there:\n%q", i, p, src[pos:min(len(src), pos+300)])
		}
		if core == "" {
			t.Fatalf("passage %d is empty", i)
		}
	}
	if rest := src[pos:]; strings.TrimSpace(rest) != "" && !strings.HasPrefix(src, "---") {
		t.Fatalf("the passages leave out the end of the text: %q", rest[:min(len(rest), 200)])
	}
}

type declaredCore struct{ core, repeated string }

// declaredCores are the ways to read a passage as repeated lines around a
// stretch of the source, longest stretch first: none; a reopened fence's
// first line; that and a closing last line; a table's header and delimiter
// rows (the first two lines).
func declaredCores(p string) []declaredCore {
	out := []declaredCore{{core: p}}
	lines := strings.SplitAfter(p, "\n")
	n := len(lines)
	if n > 2 && fenceLine.MatchString(lines[0]) {
		out = append(out, declaredCore{core: strings.Join(lines[1:], ""), repeated: lines[0]})
		if fenceLine.MatchString(lines[n-1]) {
			out = append(out, declaredCore{core: strings.TrimSuffix(strings.Join(lines[1:n-1], ""), "\n"), repeated: lines[0]})
		}
	}
	if n > 1 && fenceLine.MatchString(lines[n-1]) {
		out = append(out, declaredCore{core: strings.TrimSuffix(strings.Join(lines[:n-1], ""), "\n")})
	}
	if n > 3 && strings.HasPrefix(strings.TrimSpace(lines[0]), "|") {
		out = append(out, declaredCore{core: strings.Join(lines[2:], ""), repeated: lines[0] + lines[1]})
	}
	return out
}

func texts(units []source.Problem) []string {
	out := make([]string, len(units))
	for i, u := range units {
		out[i] = u.Text
	}
	return out
}

// TestPassagesAreTheSourceText: every passage is the document's own text,
// indentation included, whatever the passage size (item 1 of issue 28:
// `    def forward(self, X):` lost its indentation).
func TestPassagesAreTheSourceText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		limit int
	}{
		{"code.md", 6000}, {"code.md", 250}, {"longfence.md", 600}, {"longtable.md", 500},
		{"hugepara.md", 1000}, {"bom.md", 6000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units := fixtureUnits(t, tc.name, tc.limit)
			checkSourceText(t, normalizedFixture(t, tc.name), texts(units))
		})
	}
	units := fixtureUnits(t, "code.md", 6000)
	if len(units) != 1 || !strings.Contains(units[0].Text, "\n    def forward(self, X):\n") || !strings.Contains(units[0].Text, "\n    def backward(self, grad):\n") {
		t.Errorf("the code lost its indentation:\n%s", units[0].Text)
	}
}

// TestCutsKeepMarkdownStructure: a cut falls between blocks; a fenced block
// or a table too long for one passage is cut between its lines, each piece
// reopening the fence (same fence string and info string) and closing it,
// or repeating the table's header and delimiter rows; a heading is never a
// passage alone (item 2).
func TestCutsKeepMarkdownStructure(t *testing.T) {
	t.Parallel()
	t.Run("fenced block", func(t *testing.T) {
		units := fixtureUnits(t, "longfence.md", 600)
		if len(units) < 4 {
			t.Fatalf("%d passages; the fixture's code block is about 3000 characters", len(units))
		}
		for i, u := range units {
			lines := strings.Split(u.Text, "\n")
			opened := false
		lines:
			for _, l := range lines {
				switch {
				case l == `~~~go title="loop.go"`:
					opened = true
				case l == "~~~":
					if !opened {
						t.Errorf("passage %d closes a fence it did not open:\n%s", i, u.Text)
						break lines
					}
					opened = false
				case strings.HasPrefix(l, "loss") || strings.HasPrefix(l, "\tloss") && !opened:
					t.Errorf("passage %d holds code outside its fence, or without its indentation:\n%s", i, u.Text)
					break lines
				}
			}
			if opened {
				t.Errorf("passage %d leaves its fence open:\n%s", i, u.Text)
			}
			if n := utf8.RuneCountInString(u.Text); n > 600 {
				t.Errorf("passage %d: %d characters, over the limit", i, n)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		units := fixtureUnits(t, "longtable.md", 500)
		const header = "| stage | rate | note |\n|:------|-----:|------|\n"
		rows := 0
		for i, u := range units {
			if !strings.Contains(u.Text, "| warm-up step") {
				continue
			}
			if !strings.Contains(u.Text, header) {
				t.Errorf("passage %d holds table rows without the header and delimiter rows:\n%s", i, u.Text)
			}
			rows += strings.Count(u.Text, "| warm-up step")
			if n := utf8.RuneCountInString(u.Text); n > 500 {
				t.Errorf("passage %d: %d characters, over the limit", i, n)
			}
		}
		if rows != 40 {
			t.Errorf("the passages hold %d of the table's 40 rows", rows)
		}
	})
	t.Run("no cut inside a block that fits", func(t *testing.T) {
		for _, u := range fixtureUnits(t, "code.md", 250) {
			if strings.Count(u.Text, "```")%2 != 0 {
				t.Errorf("a cut inside a fenced block of 200 characters with a 250 limit:\n%s", u.Text)
			}
		}
	})
	t.Run("a heading stays with its text", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			limit int
		}{{"hugepara.md", 1000}, {"longfence.md", 600}, {"longtable.md", 500}, {"code.md", 250}} {
			for i, u := range fixtureUnits(t, tc.name, tc.limit) {
				var rest []string
				for _, l := range strings.Split(u.Text, "\n") {
					if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#") {
						rest = append(rest, l)
					}
				}
				if len(rest) == 0 {
					t.Errorf("%s passage %d is a heading alone: %q", tc.name, i, u.Text)
				}
			}
		}
		units := fixtureUnits(t, "hugepara.md", 1000)
		if !strings.HasPrefix(units[0].Text, "## Residual connections\n\nSentence 0 ") {
			t.Errorf("the heading is not with the paragraph under it: %q", units[0].Text[:min(80, len(units[0].Text))])
		}
	})
}

// TestFrontMatterAndBOM: YAML front matter is the document's metadata (its
// title is the title) and not passage text; a byte order mark is dropped,
// so the Markdown heading is found as the title (item 4).
func TestFrontMatterAndBOM(t *testing.T) {
	t.Parallel()
	units := fixtureUnits(t, "frontmatter.md", 6000)
	if len(units) != 1 || units[0].Title != "Dropout in practice" {
		t.Fatalf("front matter: %d passages, title %q", len(units), units[0].Title)
	}
	if strings.Contains(units[0].Text, "tags:") || !strings.HasPrefix(units[0].Text, "# Dropout\n\nDropout sets") {
		t.Errorf("the front matter is passage text: %q", units[0].Text)
	}
	units = fixtureUnits(t, "bom.md", 6000)
	if len(units) != 1 || units[0].Title != "Weight decay" || strings.ContainsAny(units[0].Text, "\uFEFF\r") {
		t.Errorf("BOM: title %q, text %q", units[0].Title, units[0].Text)
	}
	// A row's text is read the same way; its title field comes first.
	rows := filepath.Join(t.TempDir(), "docs.jsonl")
	runtest.WriteFile(t, rows, `{"text": "\ufeff---\r\ntitle: From the front matter\r\n---\r\n    indented first line\r\n\r\nBody."}
{"text": "---\ntitle: Ignored\n---\nOther body.", "title": "From the field"}
`)
	j := groundedJob(rows)
	j.Input.Fields.Title = "title"
	units, bad := readAll(t, j)
	if len(bad) != 0 || len(units) != 2 || units[0].Title != "From the front matter" || units[0].Text != "    indented first line\n\nBody." ||
		units[1].Title != "From the field" || units[1].Text != "Other body." {
		t.Errorf("rows: %+v, bad %v", units, bad)
	}
}

// TestShortPassages: a boilerplate document shorter than
// grounded.min_passage_chars is left out at the passage stage with its
// reason, counted in the report and the summary, and costs no request; a
// job file sets the minimum, and it is part of the fingerprint (item 3).
func TestShortPassages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	for _, name := range []string{"short.md", "code.md"} {
		runtest.WriteFile(t, filepath.Join(docs, name), normalizedFixture(t, name))
	}
	srv, url := runtest.StartSim(t, sim.Config{KeepLog: true})
	jobPath := filepath.Join(dir, "job.yaml")
	runtest.WriteFile(t, jobPath, `style: grounded
input: {paths: [docs]}
out: run
rollout: {base_url: "`+url+`", model: simulated}
grounded: {passage_chars: 2000, min_passage_chars: 150, questions_per_passage: 1}
`)
	j, err := job.PrepareJob(jobPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	fails := runtest.ReadFailures(t, j.Out)
	f, ok := fails["short.md#0"]
	if !ok || f.Stage != "passage" || !strings.Contains(f.Reason, "79 characters") || !strings.Contains(f.Reason, "min_passage_chars 150") {
		t.Errorf("the boilerplate document is not left out at the passage stage with its length: %+v (failures %v)", f, fails)
	}
	if recs := runtest.ReadCorpus(t, j.Out); len(recs) != 1 || recs["code.md#0"] == nil {
		t.Errorf("records %v, want code.md#0 only", recs)
	}
	var raw struct {
		LeftOutByStage map[string]int64 `json:"left_out_by_stage"`
	}
	readReportJSON(t, j.Out, &raw)
	if rep.Problems.LeftOut != 1 || raw.LeftOutByStage["passage"] != 1 {
		t.Errorf("report: left out %d, by stage %v", rep.Problems.LeftOut, raw.LeftOutByStage)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	if !strings.Contains(sum.String(), "left out by stage: passage=1") {
		t.Errorf("the summary does not say what was left out:\n%s", sum.String())
	}
	analyzed := 0
	for _, e := range srv.Log() {
		if e.Kind == sim.KindGroundedAnalyze && !e.Repair {
			analyzed++
		}
	}
	if analyzed != 1 {
		t.Errorf("%d analyze requests, want 1 (the short passage costs none)", analyzed)
	}
	runtest.WriteFile(t, jobPath, strings.Replace(string(must(os.ReadFile(jobPath))), "min_passage_chars: 150", "min_passage_chars: 100", 1))
	other, err := job.PrepareJob(jobPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := job.ChangedSettings(&j, &other); len(c) != 1 || c[0] != "grounded.min_passage_chars: 150 → 100" {
		t.Errorf("a changed minimum is described as %q", c)
	}
}

// TestDuplicateDocuments: a document whose text another has is left out,
// and the run says which was kept and which dropped, in the log and the
// run report: the first in input order (here: lexical order in the
// directory) is kept (item 5).
func TestDuplicateDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, url := runtest.StartSim(t, sim.Config{})
	j := runtest.GroundedTestJob(mdFixture("dups"), filepath.Join(dir, "run"), url)
	var log strings.Builder
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&log)})
	if recs := runtest.ReadCorpus(t, j.Out); len(recs)+len(runtest.ReadFailures(t, j.Out)) != 1 {
		t.Errorf("%d records, want the kept document's one passage", len(recs))
	}
	if !strings.Contains(log.String(), "duplicate document") || !strings.Contains(log.String(), "kept=a-copy.md") || !strings.Contains(log.String(), "dropped=b-original.md") {
		t.Errorf("the log does not name the duplicate:\n%s", log.String())
	}
	var raw struct {
		Dups []struct {
			Kept, Dropped struct {
				DocID string `json:"doc_id"`
				File  string `json:"file"`
			}
		} `json:"duplicate_documents"`
	}
	readReportJSON(t, j.Out, &raw)
	if len(raw.Dups) != 1 || raw.Dups[0].Kept.DocID != "a-copy.md" || raw.Dups[0].Dropped.DocID != "b-original.md" ||
		!strings.HasSuffix(raw.Dups[0].Dropped.File, "b-original.md") {
		t.Errorf("report.json's duplicate_documents: %+v", raw.Dups)
	}
	if rep.Problems.Duplicates != 1 {
		t.Errorf("duplicates %d, want 1", rep.Problems.Duplicates)
	}
}

// readReportJSON decodes RUN/report.json into v.
func readReportJSON(t *testing.T, dir string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCutterVersionEntersTheFingerprint: passages cut by other rules have
// other texts under the same ids, so a grounded run made by an older
// cutter (whose job.yaml has no passage_cutter version) is not resumed
// silently; a math job's fingerprint does not change.
func TestCutterVersionEntersTheFingerprint(t *testing.T) {
	t.Parallel()
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	math := fullJob(t)
	if _, ok := math.Versions["passage_cutter"]; ok {
		t.Errorf("a math job is stamped with the passage cutter: %v", math.Versions)
	}
	cur := groundedJob("docs")
	cur.Normalize()
	cur.StampVersions(ps, source.CutterVersion)
	if cur.Versions["passage_cutter"] != source.CutterVersion {
		t.Fatalf("a grounded job is not stamped with the passage cutter: %v", cur.Versions)
	}
	old := cur
	old.Versions = maps.Clone(cur.Versions)
	delete(old.Versions, "passage_cutter")
	if old.Fingerprint() == cur.Fingerprint() {
		t.Error("a run of the older cutter has the fingerprint of this one")
	}
	if c := job.ChangedSettings(&old, &cur); len(c) != 1 || c[0] != "versions.passage_cutter: (none) → "+source.CutterVersion {
		t.Errorf("the change of cutter is described as %q", c)
	}
}
