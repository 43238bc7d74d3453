// Package rejudge asks judges again about a sample of a corpus's judged
// items (validate rejudge): it draws the sample with audit, sends one
// judge_batch request per record through llm (cache, retries, rate
// control, budget stop) to one judge or to each judge of a panel, in
// rubric order and, for the order check, reversed, and hands every answer
// to audit, which turns them into the agreement report's figures. It is
// the only part of validate that calls models; audit only reads.
package rejudge
