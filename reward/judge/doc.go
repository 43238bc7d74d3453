// Package judge owns the satisfaction judge: it asks a model, through the
// llm client, which rubric items a response satisfies and at which step
// (Judge.Verdicts, seed 000's step-attributed judging), or how many points
// each criterion of a grounded question earns (Judge.GroundedScores, seed
// 001), parses the reply with schema's parsers, repairs an unparsable one,
// and keeps the parsed answers in a bounded memory shared by concurrent
// requests. A panel of such judges (NewPanel) answers with their strict
// majority, a failed judge counted against the response. What a verdict pays is package reward's (pure) business; the
// judge is apart from it because it talks to the network and reads the clock.
package judge
