// Package reward owns the reward formulas of the papers the corpus is made
// for, their schemes and the scoring of one rollout or one group of them:
// pure functions of a rubric, analyzed responses and the judge's verdicts.
// It reads no clock and touches no network (no net, no net/http, no
// time.Now), so a trainer, pipeline (empirical validity) and audit import it
// in-process. The satisfaction judge that produces the verdicts is package
// reward/judge; rewardd's HTTP service (protocols, codecs, admission, the
// breaker, metrics, the corpus index) is cmd/rewardd/internal/server.
//
// # Schemes
//
//   - srar (seed 000, SRaR): per-item signed deltas by type with budgets
//     (SRaRDelta), summed per step (SRaRDeltas), normalized per step across
//     the rollouts of one prompt (NormalizeSteps), added to the GRPO
//     advantage of r_base = (1 - λ) r_acc + λ r_fmt (SRaRStepAdvantages).
//     A PITFALL fallen into at a step no other rollout has an item at, or
//     at no step, is charged to the rollout's compared steps, so that it
//     costs at least what it costs at a shared step (normalizeGroupSteps).
//   - rgr (seed 003, RGR-GRPO): the weighted fraction of criteria met, 1 when
//     every Factual criterion holds (RGRReward).
//   - grounded (seed 001, Rubric-Grounded RL): the weighted score over the
//     total weight, clipped to [0, 1], 0 on a judge failure, with a
//     leave-one-out group baseline (GroundedReward, LOOAdvantages).
//   - rlcer (seed 002, RLCER): ±1 for the answer plus the min-max normalized
//     signed points of the valid items (RLCERCoT, ItemValidity).
//   - papo (seed 004, PAPO): the outcome advantage plus a process advantage
//     normalized only among correct rollouts (PAPOProcessAdvantages).
//
// Accuracy always comes from package verify against the record's ground
// truth, the code the corpus was built with, told the response's
// finish_reason when the caller has it (AnalyzeFinished): a response cut off
// at the token limit gives no answer, and in a group no more advantage, on
// any term or step, than a finished group-mate with the same text
// (capCutOffAdvantages). Score and ScoreGroup turn a
// rubric, analyzed responses (Analyze) and the judge's verdicts into the
// results rewardd returns; ScoreWith and ScoreGroupIn take the
// --on-judge-failure policy, ScoreGroupIn also memory it reuses. A response
// whose judgment failed is paid, by default, the lowest reward any judgment
// could give it (OnJudgeFailureFloor), and in a group no more advantage, on
// any term or step, than any judgment of it could have given it there, nor
// than any judged group-mate whose work it could equal gets (the twin
// rule; floorAdvantages).
package reward
