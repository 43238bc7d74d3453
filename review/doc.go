// Package review owns people's review of a rubric corpus: the append-only
// review log (one line per decision, written and synced at once, stamped
// with the corpus's fingerprint), the decisions it replays into (accept,
// reject, edit of an item; skip and flag of a record; undo), the order in
// which items are put before a reviewer (the likely-wrong first), the
// policies that settle two reviewers' conflicting decisions, the
// application of the decisions to records on export, and the figures
// `validate` reports of a review (coverage, agreement with the validity
// judge and between reviewers, Cohen's kappa from package audit).
//
// # The log
//
// A reviewer's log is CORPUS/review/NAME.jsonl for a directory corpus,
// RUN/review/NAME.jsonl for a run's shard file (EXPORT/review for an
// export's data file), and review/NAME.jsonl beside any other file; it is
// never among the corpus's shards (see [Dir]). Its first line is a header naming the corpus
// fingerprint (see [Fingerprint]); every later line is one [Entry]. A log is
// held with an exclusive lock while a page writes it, so the same reviewer
// cannot review twice at once; reviewers each have their own log and review
// the same corpus at the same time. Each entry is written with one write
// and synced before the page is answered: a killed server loses at most the
// entry being written, whose torn tail is cut off when the log is opened
// again.
//
// The HTTP page that writes the log is package review/page.
package review
