package job

import "github.com/rubricforge/rubricforge/schema"

// UnitWords name, for a person, what a style's unit of work is, what
// leaves one out, and what its records hold.
type UnitWords struct {
	Unit, Units, LeftOutBy, Items, Empirical string
}

// UnitWordsOf is the words of a style: problems, or a grounded job's
// passages.
func UnitWordsOf(style string) UnitWords {
	if style == schema.StyleGrounded {
		return UnitWords{"passage", "passages", "the quality checks", "criteria", "criteria whose score varies across closed-book answers"}
	}
	return UnitWords{"problem", "problems", "selection", "rubric items", "empirically valid"}
}
