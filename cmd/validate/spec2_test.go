package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSpec2CorpusHasNoSpecViolations: a corpus written before the grounded
// style (spec 2, the fixture is a real run of that version) is one this
// tool reads, so its records are not structural violations for their spec
// version.
func TestSpec2CorpusHasNoSpecViolations(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "corpus", "testdata", "spec2-run")
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{dir, "--json"}, &out, &errOut, func(string) string { return "" }); code != exitOK {
		t.Fatalf("validate of a spec-2 run: exit %d\n%s", code, errOut.String())
	}
	var rep struct {
		Corpus struct {
			Records int64 `json:"records"`
		} `json:"corpus"`
		Structure struct {
			ByRule []struct {
				Rule  string `json:"rule"`
				Count int64  `json:"violations"`
			} `json:"by_rule"`
		} `json:"structure"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Corpus.Records == 0 {
		t.Fatalf("no records read from the spec-2 run:\n%s", out.String())
	}
	for _, r := range rep.Structure.ByRule {
		if r.Rule == "spec_version" && r.Count > 0 {
			t.Errorf("%d spec_version violations in a spec-2 corpus", r.Count)
		}
	}
}
