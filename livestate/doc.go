// Package livestate keeps a training run's live rubric: for every problem
// rewardd scores groups of, each item's satisfaction and its correlation
// with correctness over a window of the problem's recent groups, the items
// retired because the policy saturated them (and reinstated when it no
// longer does), the elicited criteria waiting to be measured and those
// admitted into the rubric, and the rubric's version, which moves by one at
// each retirement, reinstatement or admission.
//
// Everything lives in an append-only log of JSON lines (internal/applog,
// the toolkit's one owner of such logs) in a state directory
// (--state-dir), one log per replica, fsynced before a group's
// answer is sent (many groups share a sync), so a kill loses no group a
// trainer was answered for. Open reads the log back and replays it: the
// decisions (retire, reinstate, admit, drop) are recomputed from the group
// records under the settings each session logged, and every decision the
// log holds must be the one recomputed, so a replay gives the same
// versions; a decision a crash cut off the end is written again.
//
// Live state is per problem and kept by one replica: a problem's groups
// must reach one rewardd. Replicas that share a state directory claim each
// problem in claims/ when they first see it, and a replica that finds a
// problem claimed by another refuses it (ErrClaimed).
//
// Read loads a state directory without writing to it (distill refine
// --from-stats).
package livestate
