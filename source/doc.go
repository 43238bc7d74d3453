// Package source reads a job's input into units of work: problems from
// JSONL or Parquet files (plain, gzip or zstd), or passages cut from
// documents (Markdown and text files, document folders, JSONL rows of
// text) with each passage's document context. It owns the input's checks
// before a run (a wrong format stops early, bad rows are named by file and
// line), the digest that tells a resumed run its input changed, and the
// passage cutter's rules (CutterVersion). It imports no package that runs
// a job.
package source
