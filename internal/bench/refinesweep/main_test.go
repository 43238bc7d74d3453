package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSmallSweep is the sweep's fast small version: over 4 seeds of 40
// records, at the target condition (5% judge noise, 16 rollouts) refine
// drops at least 80% of each defect kind and at most 8% of aligned items,
// and says no pure-noise corpus was raised; the output names every figure.
// (The full sweep, -seeds 100 -records 80, holds the targets: >= 85% and
// <= 5%, raised in <= 5% of the seeds.)
func TestSmallSweep(t *testing.T) {
	o := &options{seeds: 4, records: 40, first: 1000}
	res, err := sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range defectKinds[:4] {
		if share := pct(res.target.dropped[k], res.target.planted[k]); share < 80 || res.target.planted[k] < 50 {
			t.Errorf("%v: dropped %d of %d (%.1f%%); want at least 80%% of at least 50", k, res.target.dropped[k], res.target.planted[k], share)
		}
	}
	a := defectKinds[0] - 1 // synthcorpus.Aligned
	if share := pct(res.target.dropped[a], res.target.planted[a]); share > 8 {
		t.Errorf("aligned dropped %.1f%%; want at most 8%%", share)
	}
	if res.raised != 0 || res.noiseSeeds != 4 {
		t.Errorf("pure noise raised in %d of %d seeds; want 0 of 4", res.raised, res.noiseSeeds)
	}
	var b bytes.Buffer
	res.print(&b, o)
	for _, want := range []string{"target condition", "misaligned", "redundant", "aligned", " rollouts:", "pure-noise corpora", "said raised in 0 of 4 seeds"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, b.String())
		}
	}
}

func TestFlags(t *testing.T) {
	var errb bytes.Buffer
	if _, err := parseFlags([]string{"-seeds", "0"}, &errb); err == nil {
		t.Error("-seeds 0 accepted")
	}
	if o, err := parseFlags(nil, &errb); err != nil || o.seeds != 200 || o.records != 100 {
		t.Errorf("defaults %+v, %v", o, err)
	}
}
