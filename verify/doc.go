// Package verify extracts the final answer from a model's solution and decides whether it is
// mathematically equivalent to a dataset's ground truth, in pure Go.
//
// # Entry points
//
// [Extract] and [ExtractMethod] pull the final answer out of a solution text: the last marker
// of any kind wins, whichever comes last in the text (an <answer>...</answer> tag, a \boxed{...}
// or \fbox{...}, an explicit final-answer statement in English or another language such as
// "The final answer is 7", "Answer: 7", "Réponse : 3,5" or "答案是 7"). Without any marker, a
// choice letter that opens the solution before its reason is the answer, and else the last
// resort is the value stated in the final sentence, never in an earlier one and never in a
// negated or hedged clause; a bare answer gives ok=false. A text that was cut off gives
// ok=false too: [ExtractWith] and [CompareWith] take what is known of the text ([Options]),
// and a known finish reason alone says whether it was cut off ("length"); without one, a text
// that visibly stops mid-way was (inside math, a box, a bracket or its <think>, or in a final
// sentence left unfinished), but an answer it clearly gave before the cut stands unless the
// text takes it up again. A line that opens another problem after a given answer ends the
// text. The must-still-find corpus of this rule is testdata/ground/corpus.jsonl.
//
// [Equal] and [Compare] decide equivalence. Both sides go through the same pipeline:
// extraction, normalization (chat-template tokens, doubly escaped LaTeX, full-width forms and
// digits of other scripts), a lexer that drops LaTeX decoration (spacing, sizing, \text units,
// currency, degree and percent marks), a cheap canonical-string comparison, a multiple-choice
// check, and then a real expression parser for LaTeX and plain notation. Parsed answers are
// compared by shape: numbers exactly as rationals where possible, expressions by evaluation at
// deterministic random points, sets without order, tuples, ratios and intervals with order and
// bracket kind, matrices element-wise after evaluating their arithmetic, labelled answers by
// their values, equations up to a constant factor, inequalities as intervals.
//
// [VerifyJSONL] runs either over JSON lines (with an optional finish_reason per line), for the
// distill verify command.
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
const PolicyVersion = "5"
