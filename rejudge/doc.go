// Package rejudge asks judges again about a sample of a corpus's judged
// items (validate rejudge): it draws the sample with audit, sends one
// validity request per record (judge_batch: a math record's drawn items)
// or per grounded question (grounded_judge_batch: its drawn criteria,
// against the passage) through llm (cache, retries, rate control, budget
// stop) to one judge or to each judge of a panel, in rubric order and,
// for the order check, reversed, and hands every answer to audit, which
// turns them into the agreement report's figures. It is the only part of
// validate that calls models; audit only reads.
package rejudge
