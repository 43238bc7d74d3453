// Package refine owns `distill refine`: making a new corpus from an old
// one by the discrimination its own verdicts measure (package discrim),
// with the gain measured on rollouts the refinement never saw.
//
// For every math-style record with satisfaction verdicts, the rollouts are
// split by discrim.Split into a fit half and a held-out half. On the fit
// half an item is dropped when it is dead (good on no rollout), saturated
// (good on every rollout; with Options.Saturated95 on ≥ 95%),
// anti-discriminative (discrim's one-sided Fisher test, or an edge below
// Options.MinEdge), or the weaker (smaller edge) of a redundant pair whose
// items also move together within the correct or the flawed rollouts.
// ANSWER items are never dropped, and dropped items are restored, largest
// edge first, where the style's rules need them (srar: a SUGGEST item;
// factual_process: three items). The kept items are renumbered and
// re-weighted by [Weights]; the rubric AUROC is measured on the held-out
// half before and after. Records that cannot be measured on the fit half
// (grounded records, records without verdicts or without both sides) are
// copied unchanged.
//
// The refined corpus is a run directory like any other: shards and a
// manifest whose job history names the refinement's fingerprint and
// settings (the source's path and job fingerprint among them); every
// record carries that fingerprint. refine.json holds the [Summary] and
// refine-records.jsonl one [Decision] per record. It is written into a
// hidden sibling directory and renamed into place at the end, so --out
// never exists half written; a killed refinement leaves only that
// directory, which the next one removes and starts over.
//
// With [Config.Decompose] (--decompose) the saturated items of the
// refined records are first split into finer ones through the pipeline's
// engine (pipeline.Options.Decompose: stages decompose, judge, empirical,
// in a run directory beside Out that survives a kill and ends up in
// Out/decompose); each such record is then decided with its finer items
// appended, and a finer item is kept only when it is valid and its fit
// edge is positive. [Plan] (--decompose --plan) prepares the same
// decomposition and runs package plan's pilot and projection on it
// instead, leaving its work directory for the real refine to resume.
// docs/refine.md documents the rules and the weights with a worked
// example.
package refine
