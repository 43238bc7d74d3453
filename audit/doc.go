// Package audit reads a rubric corpus as a stream and computes what
// `validate` reports about it: structural violations (by record id and item
// id), validity rates by item type, item counts per record, PITFALL x BONUS
// co-occurrence, pass rates, rollout lengths, tokens and cost, empirical
// validity, the agreement of the stored validity verdicts with another
// judge or with people (Cohen's kappa), and the validity rates with 95%
// intervals, corrected for the judge's errors when people labelled a sample
// (the estimators are package judgestats). It renders the report as text,
// JSON and a self-contained HTML page. It calls no model: re-judging a
// sample (validate rejudge) is package rejudge, which hands its answers to
// [AgreementReport.AddRejudged] for the figures.
//
// # Inputs
//
// [Open] accepts run directories (manifest.json and shards/), `distill
// export` directories (export.json and data/) in the "jsonl" and "verl"
// formats, and shard or data files given one by one. A verl export's label
// column holds the rubric only, so the sections that need rollouts, usage or
// provenance are reported as unavailable; "rar" and "srar-lines" exports hold
// no item types or verdicts and are refused with [ErrNotAuditable].
//
// # Streaming
//
// Every figure is computed in one pass. Parquet files are read through
// corpus.Scan with projections that hold only the columns a figure needs:
// no rollout text and no judge reason is decoded. Files are read in
// parallel, each into its own accumulator, and the accumulators are merged
// in file order, so the report does not depend on scheduling. Memory grows
// with the number of records only by their ids (for the duplicate check)
// and their rollouts' token counts (for exact medians).
//
// # Damaged input
//
// A file that cannot be read (truncated, another schema, a row count that
// disagrees with the manifest) and a JSONL line that does not parse are
// listed as input problems and the rest is audited; duplicate record ids are
// structural violations. Neither ever panics.
package audit
