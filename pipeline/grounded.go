package pipeline

import "github.com/rubricforge/rubricforge/schema"

// groundedStages are the stages of the grounded style (seed 001).
var groundedStages = []stage{}

func (e *engine) groundedRecord(w *unit) *schema.Record { return nil }
