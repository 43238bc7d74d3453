package reviewtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
)

// TestDemoRunIsSound: the demo-like run is a corpus validate finds no
// fault in (its stored empirical figures are what its verdicts give), with
// the judge-invalid items the review tests count on.
func TestDemoRunIsSound(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := DemoRun(dir, 6); err != nil {
		t.Fatal(err)
	}
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Audit(context.Background(), in, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corpus.Records != 6 || rep.Structure.Violations != 0 || len(rep.InputProblems) != 0 {
		t.Fatalf("%d records, %d violations %+v, problems %+v", rep.Corpus.Records, rep.Structure.Violations, rep.Structure.ByRule, rep.InputProblems)
	}
	if v := rep.Validity; v == nil || v.Overall.Invalid != 3 {
		t.Fatalf("validity %+v; want the PITFALLs of r00, r02, r04 invalid", v)
	}
}
