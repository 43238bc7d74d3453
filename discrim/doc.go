// Package discrim owns the discrimination statistics of a rubric: how well
// each item, and the rubric as a whole, separates a record's correct
// rollouts from its flawed ones, measured on the corpus's own verified
// rollouts and per-rollout satisfaction verdicts (no new requests). It is
// pure: it imports only schema, reward (whose formulas say what a scheme
// pays) and the standard library, reads no files and keeps no clock.
//
// # Definitions
//
// For item i of a record and rollout r with correctness c_r and satisfaction
// s_ir, the item's good-side value is x_ir = s_ir for items of positive
// polarity and 1 − s_ir for PITFALL items (not falling into the trap is
// good).
//
//   - edge e_i = mean(x_ir | correct) − mean(x_ir | flawed), defined only when
//     the measured rollouts hold both sides.
//   - rubric score of a rollout = Σ_i w_i x_ir / Σ_i w_i over the record's
//     items, w_i = |weight| for the factual_process style and 1 for srar
//     (whose items carry no weights); computed with and without ANSWER items.
//   - rubric AUROC = P(score(correct) > score(flawed)) + ½ P(tie) over all
//     correct × flawed pairs of the record.
//   - saturated: x_ir = 0 on no more of the measured rollouts of each side
//     (correct, flawed) than the satisfaction judge's errors explain
//     ([FlipsExplain] at its error rate
//     [Options.JudgeError], [DefaultJudgeError] when none is measured; with
//     none, x_ir = 1 on every rollout) ([ItemStats.Saturated]); reported
//     beside it, saturated or x_ir = 1 on at least 95% of them
//     ([ItemStats.Saturated95]). dead: likewise with x_ir = 1.
//   - anti-discriminative: e_i < 0 beyond noise, decided by the one-sided
//     Fisher exact test (see [FisherLess]) under multiple-comparison
//     control: under "x does not depend on correctness", given how many
//     rollouts are correct and how many have x = 1, the chance that the
//     correct ones hold as few x = 1 as observed or fewer, adjusted by
//     Benjamini-Hochberg over the record's items ([BenjaminiHochberg]), is
//     at most [DefaultAntiAlpha] (0.05). The smallest p a record can reach
//     is 1 / C(n, n_correct), so a record of 8 rollouts with one flawed
//     rollout can never show an item anti-discriminative (p ≥ 1/8), and one
//     with 4 and 4 can (p ≥ 1/70): an edge below zero that the counts
//     cannot tell from chance is counted as a negative edge only.
//   - redundant pair: two items of a record that move together within the
//     labels: their within-label correlation ([WithinPhi], RRD's: each
//     item's x centred on the mean of its own label, correct or flawed) is
//     at least what two wordings of one criterion keep under the judge's
//     errors, 0.9·(1 − 2·error)², and their association within the labels
//     is beyond chance ([StratifiedAssociationP], adjusted by
//     Benjamini-Hochberg over the record's pairs, at most 0.05). Two items
//     that each follow correctness, or that move against each other, are
//     not redundant.
//   - near-duplicate texts, reported apart: the word-bigram Jaccard
//     similarity of the two items' texts is ≥ 0.8 (words are runs of letters
//     and digits, lower-cased; a text of one word is its word).
//
// # Shape
//
// A [Matrix] is one record's verdicts (built by [FromRecord], or item by
// item and rollout by rollout by a reader with its own row type). [Measure]
// measures it over all its rollouts or a subset given as positions, so a
// caller can fit on one half and measure on the other ([Split] is the fixed
// split), and score a rubric under new weights ([AUROCWith]). [Folds]
// assigns rollouts to cross-fitting folds; a [Scorer] scores rollouts under
// a rubric [Version] by the rubric score or the part of a scheme's reward
// the rubric pays (reward.RubricReward); a [Boot] turns per-record AUROCs
// over a [Sample] (pairs within its groups) into means with 95% intervals
// from a bootstrap over records and rollouts. An [Aggregate] folds records' measurements into bounded counts and
// histograms (by item type and by record) and merges with another in a
// fixed order; records it cannot measure are counted by [Reason], never as
// 0 or 1. The grounded style's edge (open-book minus closed-book mean score
// over the weight) is [GroundedEdge]; the sampling it needs belongs to the
// empirical stage.
package discrim
