package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/discrim"
)

// RefineSummaryName is the file in a refined run directory where distill
// refine writes its summary (refine.Summary), which validate reads back.
const RefineSummaryName = "refine.json"

// refineCommand is the job history's command setting of a refinement.
const refineCommand = "distill refine"

// refinedSummary is what validate reads of refine.json.
type refinedSummary struct {
	Fingerprint string `json:"fingerprint"`
	Source      string `json:"source"`
	Folds       int    `json:"folds"`
	Records     struct {
		Refined int64 `json:"refined"`
	} `json:"records"`
	HeldOut  discrim.FigureSet `json:"heldout"`
	ByScheme map[string]struct {
		HeldOut discrim.FigureSet `json:"heldout"`
	} `json:"by_scheme"`
}

// readRefined is what the refine.json of run directory dir says, when the
// manifest's current job is a refinement and refine.json is that
// refinement's; nil otherwise (a corpus distill run made, or a
// refine.json of another refinement).
func readRefined(dir string, m corpus.Manifest) *Refined {
	refined := false
	for _, j := range m.Jobs {
		refined = refined || j.Fingerprint == m.JobFingerprint && j.Settings["command"] == refineCommand
	}
	if !refined {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, RefineSummaryName))
	if err != nil {
		return nil
	}
	var s refinedSummary
	if err := json.Unmarshal(raw, &s); err != nil || s.Fingerprint != m.JobFingerprint {
		return nil
	}
	return &Refined{
		Fingerprint: s.Fingerprint, From: s.Source, Records: s.Records.Refined, Folds: s.Folds,
		RolloutsUsed: fmt.Sprintf("every judged rollout of each of its %s refined records decided which of its items to keep and their weights", num(s.Records.Refined)),
		HeldOut:      s.ByScheme[discrim.RubricScore].HeldOut, Default: s.HeldOut,
	}
}
