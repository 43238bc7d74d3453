// Package refine owns `distill refine`: making a new corpus from an old
// one by the discrimination its own verdicts measure (package discrim),
// with the gain measured on rollouts the refinement never saw.
//
// For every math-style record with satisfaction verdicts on both sides,
// the rules decide on all its judged rollouts: an item is dropped when it
// is dead or saturated within the judge's errors (discrim's definitions at
// Options.JudgeError; with Options.Saturated95 also good on ≥ 95%),
// anti-discriminative (discrim's Fisher test under Benjamini-Hochberg, or
// an edge below Options.MinEdge), or the weaker (smaller edge) of a
// redundant pair (the two move together within the correct and within the
// flawed rollouts). ANSWER items are never dropped, and dropped items are
// restored, largest edge first, where the style's rules need them (srar: a
// SUGGEST item; factual_process: three items). The kept items are
// renumbered and re-weighted by [Weights]. Records without both sides (or
// with fewer than Options.MinSide on one), grounded records and records
// without verdicts are copied unchanged.
//
// What the refinement gains is measured honestly by cross-fitting
// ([Decision.Held], [Summary]): the rollouts fall in Options.Folds folds,
// each fold's rollouts are scored by the rubric the same rules leave when
// they decide on the other folds, and a correct and a flawed rollout are
// compared only within one fold. The figures are the AUROCs of the reward
// each scheme pays (reward.RubricReward through discrim's Scorer), with and
// without ANSWER items, before and after, with 95% intervals from a
// bootstrap over records and rollouts (discrim.Boot); a change is "raised"
// only when its interval lies above 0. The in-sample figures (the refined
// rubric on the rollouts it was decided on, as validate sees the refined
// corpus) are reported beside them.
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
// appended, and a finer item is kept only when it is valid and its edge is
// positive. The distiller is shown only the rollouts of one half
// (discrim.Split's fit half); the held-out figures of a decomposed record
// are measured on the other half alone. [Plan] (--decompose --plan) prepares the same
// decomposition and runs package plan's pilot and projection on it
// instead, leaving its work directory for the real refine to resume.
// docs/refine.md documents the rules and the weights with a worked
// example.
package refine
