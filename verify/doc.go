// Package verify extracts the final answer from a model's solution and decides whether it is
// mathematically equivalent to a dataset's ground truth, in pure Go.
//
// # Entry points
//
// [Extract] pulls the final answer out of a solution text: the last <answer>...</answer> tag,
// else the last \boxed{...} or \fbox{...}, else an explicit final-answer statement such as
// "The final answer is 7" or an "Answer: 7" line. It never guesses: text without such a marker
// gives ok=false.
//
// [Equal] and [Compare] decide equivalence. Both sides go through the same pipeline: extraction
// (when a marker is present), a lexer that drops LaTeX decoration (spacing, sizing, \text units,
// dollar signs, degree and percent marks), a cheap canonical-string comparison, a multiple-choice
// check, and then a real expression parser for LaTeX and plain notation. Parsed answers are
// compared by shape: numbers exactly as rationals where possible, expressions by evaluation at
// deterministic random points, sets without order, tuples and intervals with order and bracket
// kind, matrices element-wise, equations up to a constant factor, inequalities as intervals.
//
// The policy is written down in the README (Answer equivalence policy). A false "equal" rewards a wrong
// answer, so wherever a case is ambiguous the comparison says "not equal".
//
// # Bounds
//
// Every comparison does bounded work whatever the input: answers longer than a few kilobytes are
// compared as strings only, token count, nesting depth, node count, exponent and factorial sizes
// are capped, and an internal panic is recovered and reported as not-equal with a Reason.
package verify

// PolicyVersion names the equivalence policy: it changes whenever Extract,
// Equal or Compare may decide a case differently. It is part of a job's
// identity, so a corpus never resumes silently into verdicts of an older
// policy.
const PolicyVersion = "1"
