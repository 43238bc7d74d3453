package pipeline

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
)

// TestBlobsLeftOutBeforeAnyRequest: a 200 KB data-URI image in a document
// is left out at the passage stage with a reason naming it, before any
// request; the text around it is made into records, and no request
// carries the image (issue 43, item 4: synthesize and enrich got it whole
// and failed with a 400 after the analysis was paid).
func TestBlobsLeftOutBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	para := strings.Repeat("A heat pipe moves heat by evaporating a working fluid at the hot end and condensing it at the cold end. ", 3)
	img := "![a diagram of the pipe](data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG\x00\x01binary", 15_000))) + ")"
	runtest.WriteFile(t, filepath.Join(dir, "docs", "pipe.md"), "# Heat pipes\n\n"+para+"\n\n"+img+"\n\n## The wick\n\n"+para+"\n")
	srv, url := runtest.StartSim(t, sim.Config{KeepLog: true})
	jobPath := filepath.Join(dir, "job.yaml")
	runtest.WriteFile(t, jobPath, `style: grounded
input: {paths: [docs]}
out: run
rollout: {base_url: "`+url+`", model: simulated}
grounded: {passage_chars: 2000, min_passage_chars: 100}
`)
	j, err := job.PrepareJob(jobPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	fails := runtest.ReadFailures(t, j.Out)
	var blob string
	for id, f := range fails {
		if f.Stage == "passage" && strings.Contains(f.Reason, "a data-URI image (image/png, ") {
			blob = id
		}
	}
	if blob == "" {
		t.Fatalf("the image is not left out at the passage stage with a reason naming it: %+v", fails)
	}
	if recs := runtest.ReadCorpus(t, j.Out); len(recs) != 2 {
		t.Errorf("%d records, want the two passages of text around the image", len(recs))
	}
	for _, e := range srv.Log() {
		if e.Tokens > 20_000 {
			t.Errorf("a %s request of %d tokens: the image was sent", e.Kind, e.Tokens)
		}
	}
	if rep.Problems.LeftOut != 1 || rep.Problems.Failed != 0 {
		t.Errorf("left out %d, failed %d; want the image left out, nothing failed", rep.Problems.LeftOut, rep.Problems.Failed)
	}
}
