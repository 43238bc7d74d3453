// Package pipeline turns input units into corpus records: problems (the math
// styles srar and factual_process: rollout, verify/select, distill, judge,
// empirical) or passages of documents (the grounded style: analyze,
// synthesize, enrich, quality, judge, empirical). A style is a stage list
// (stagesOf); one engine runs every style's stages with the same admission,
// request priority, cache, repair of unparseable replies, failures by stage,
// budget, checkpoints, status and report. In batch mode (a section's
// request_mode) the same engine runs in waves: a pass runs every pending
// problem until its next request goes into a provider batch
// (llm.Batcher), and once batches answer, another pass runs the problems
// they let go on, their earlier answers read from the cache. The job it
// runs is package job's and its units come from package source. With
// Options.Decompose (distill refine --decompose) the same engine runs the
// decompose stages instead (decompose, judge, empirical) over records
// whose saturated items it splits into finer ones.
//
// The judge and empirical stages ask their stage's model, or every judge
// of the stage's panel (judge.panel, empirical.panel; panel.go): the
// panel's verdict is a strict majority in which a judge without a usable
// verdict votes against the response or item (so a PITFALL counts as
// present), a tie is no, and a grounded score is the judges' lower median
// with a failed judge's as 0; every judge's verdicts go in Record.Panel.
// A judge shown several items at once sees them in an order shuffled per
// judge and per record (judge.order, job.OrderPermutation).
//
// distill plan (package plan) runs its pilot through Run with a Pilot in
// Options: the sample the feeder takes and a look at each problem's start
// and end. plan.json's document is package corpus's; a run's status and
// its batch pricing read it from there.
package pipeline
