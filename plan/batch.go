package plan

import (
	"maps"
	"slices"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/figures"
	"github.com/rubricforge/rubricforge/pipeline"

	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
)

// A plan of a job with stages in batch mode runs its pilot online (a batch
// may take 24 hours; the answers land in the cache the real run reads,
// whatever way they came) and prices those stages at the batch rate.

// resolveAutoModes settles the sections in auto mode (--batch alone): batch
// when the endpoint has a Batch API, else online, as the run will.
func resolveAutoModes(ctx context.Context, jb *job.Job, opt pipeline.Options) error {
	for _, name := range slices.Sorted(maps.Keys(jb.BatchSections())) {
		ep := jb.BatchSections()[name]
		if ep.Mode != job.ModeAuto {
			continue
		}
		if jb.Batch.FilesDir != "" {
			ep.Mode = job.ModeBatch
			continue
		}
		key := ""
		if ep.APIKeyEnv != "" {
			key = opt.Getenv(ep.APIKeyEnv)
		}
		api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: ep.BaseURL, APIKey: key}, llm.Options{MaxAttempts: jb.Limits.MaxAttempts, HTTPClient: opt.HTTPClient})
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		ok, err := api.Available(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("asking %s whether it has a Batch API: %w", api.Base(), err)
		}
		ep.Mode = job.ModeOnline
		if ok {
			ep.Mode = job.ModeBatch
		}
	}
	return nil
}

// onlinePilot is the job the pilot of a plan runs: every section online.
func onlinePilot(jb job.Job) job.Job {
	for _, ep := range jb.BatchSections() {
		ep.Mode = job.ModeOnline
	}
	return jb
}

// batchStages lists the stages (of stages) whose section is in batch mode.
func batchStages(jb *job.Job, stages []string) []string {
	var out []string
	for _, s := range stages {
		if stageEndpoint(jb, s).Mode == job.ModeBatch {
			out = append(out, s)
		}
	}
	return out
}

// batchRateOf is the share of the online price a stage's requests cost:
// the model's batch rate when the stage is in batch mode, else 1.
func batchRateOf(jb *job.Job, stage string) float64 {
	ep := stageEndpoint(jb, stage)
	if ep.Mode != job.ModeBatch {
		return 1
	}
	if r := jb.Prices[ep.Model].BatchRate; r > 0 {
		return r
	}
	return llm.DefaultBatchRate
}

// writeBatchStages says which stages the plan priced at the batch rate.
func writeBatchStages(w io.Writer, p *corpus.PlanDoc) {
	if len(p.BatchStages) == 0 {
		return
	}
	fmt.Fprintf(w, "batch mode: %s priced at the batch rate (prices: batch_rate, half by default); the pilot ran online; "+
		"the wall time assumes online speed, and each wave of batches may take up to the provider's 24 h window\n",
		strings.Join(p.BatchStages, ", "))
	if ws := p.WithSpent; ws != nil {
		fmt.Fprintf(w, "  the pilot ran online: %s spent in this directory at the online price (the run reuses its answers, and its budget counts them); "+
			"the plan and the run together: %s, where the whole input in batches would be %s\n",
			figures.Dollars(p.SpentUSD), ws.Money(), figures.Dollars(p.Total.CostUSD.Value))
	}
}
