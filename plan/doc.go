// Package plan is distill plan: a pilot run on a deterministic sample of
// the job's input and the projection of the whole job from it. The pilot
// is an ordinary run of the engine (pipeline.Run) narrowed to the sample
// through pipeline.Options.Pilot, in the run directory and cache the real
// run uses, with every request timed by endpoint. From what the sampled
// problems took, the projection estimates the whole input's requests,
// tokens, cost, records, validity and wall time, each with a bootstrap
// range, names the constraint that sets the time and what relaxing it buys,
// and checks the budget; WriteText prints it as a table. The document it
// writes, RUN/plan.json, is corpus.PlanDoc, so that distill status and batch
// pricing read it without this package.
package plan
