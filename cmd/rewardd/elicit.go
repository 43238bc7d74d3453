package main

import (
	"flag"
)

// elicitFlags are the flags of elicitation.
func (o *options) elicitFlags(fs *flag.FlagSet) {
	e := &o.live.elicit
	fs.IntVar(&e.AdmitGroups, "elicit-admit-groups", 4, "groups an elicited criterion is measured over before it is admitted (corr > alpha) or dropped (e.g. --elicit-admit-groups 8)")
	fs.IntVar(&e.MaxPerProblem, "elicit-max-per-problem", 5, "elicited criteria admitted into a problem's rubric at most (e.g. --elicit-max-per-problem 3)")
}

// checkElicit reports the elicitation flags' problems.
func (o *options) checkElicit() []error { return nil }
