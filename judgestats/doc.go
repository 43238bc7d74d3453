// Package judgestats estimates how often rubric items are really valid when
// an LLM judge, not a person, gave the verdicts: the judge's sensitivity and
// specificity against people's labels on a sample, the judge's raw validity
// rate with a Wilson interval, and the rate corrected for the judge's errors
// (Rogan-Gladen) with a 95% interval that accounts for both the corpus and
// the people's sample. It is pure: counts in, figures out; no I/O, no clock,
// no randomness. It also holds the rule by which a panel of judges
// decides (Majority, PanelScore, Met, AgreedStep): a strict majority, a
// judge that failed counted as a vote against, ties never broken by order,
// the verdict's step the earliest its judges named; and how much a
// panel's judges agree with each other (FleissKappa, FleissVotes: Fleiss'
// kappa, a judge's failures left out of its ratings).
//
// # The correction
//
// Call an item "valid" the positive class. With the judge's sensitivity
// Se = P(judge valid | people valid) and specificity Sp = P(judge invalid |
// people invalid), the judge's expected raw rate is p = θ·Se + (1-θ)(1-Sp)
// for a true rate θ, so
//
//	θ = (p + Sp - 1) / (Se + Sp - 1)
//
// (Rogan and Gladen, 1978; the plug-in estimator of arXiv 2511.21140). The
// denominator J = Se + Sp - 1 is Youden's index: when J <= 0 the judge is no
// better than chance against the people and θ is undefined ([NoBetterThanChance]);
// this is decided on the integer counts, never by comparing a float with 0.
// The estimate is clipped to [0, 1].
//
// # The interval
//
// The interval is a delta-method (Wald) interval on θ with the three
// binomial variances, the corpus's and the two halves of the people's
// sample:
//
//	Var(θ) ≈ [ p(1-p)/n + θ²·Se(1-Se)/m1 + (1-θ)²·Sp(1-Sp)/m0 ] / J²
//
// where n is the number of judged items in the corpus, m1 the items people
// called valid and m0 those they called invalid. Judges of rubric validity
// are usually right about most items and people find few invalid ones, so
// Sp is often estimated from a handful of items, sometimes with no error at
// all (Sp = 1, variance 0): a plain Wald interval is then far too narrow.
// As Agresti and Coull do for one proportion, the interval is computed at
// proportions and sizes adjusted by z²/2 successes and z²/2 failures each
// (p̃ = (k + z²/2)/(n + z²), likewise Se and Sp, with n + z², m1 + z²,
// m0 + z² as sizes). Its centre, the estimate at the adjusted proportions,
// is clipped to [0, 1] before the half-width is added (a raw rate that the
// judge's error rates cannot produce then gives [1-h, 1], not the single
// point 1), and the interval is clipped to [0, 1] and widened to hold the
// point estimate. When the adjusted J is not positive the interval is [0, 1]:
// the sample cannot tell the judge from chance. TestCoverage measures the
// interval's coverage on simulated corpora and samples.
package judgestats
