package reward

import (
	"encoding/json"
	"math"
	"strconv"
)

// appendJSON appends g as json.Encoder.Encode writes it, newline included,
// without reflection or allocations. It reports false, having appended part
// of it, at a number encoding/json refuses (NaN, ±Inf) or a components or
// metrics key that needs escaping: the caller then lets encoding/json
// answer.
func (g *groupJSON) appendJSON(b []byte) ([]byte, bool) {
	o := jsonOut{b: b, ok: true}
	o.raw(`{"results":`)
	list(&o, g.Results, (*jsonOut).result)
	o.raw(`,"advantages":`)
	list(&o, g.Advantages, (*jsonOut).advantage)
	o.raw(`,"validity":`)
	list(&o, g.Validity, (*jsonOut).validity)
	if g.Error != "" {
		o.raw(`,"error":`)
		o.str(g.Error)
	}
	o.raw("}\n")
	return o.b, o.ok
}

// jsonOut appends JSON text; ok turns false at what appendJSON leaves to
// encoding/json.
type jsonOut struct {
	b  []byte
	ok bool
}

// list appends xs as a JSON list (null when nil), each with each.
func list[T any](o *jsonOut, xs []T, each func(*jsonOut, *T)) {
	if xs == nil {
		o.raw("null")
		return
	}
	o.raw("[")
	for i := range xs {
		if i > 0 {
			o.raw(",")
		}
		each(o, &xs[i])
	}
	o.raw("]")
}

func (o *jsonOut) result(r *Result) {
	o.raw("{")
	if r.RequestID != "" {
		o.raw(`"request_id":`)
		o.str(r.RequestID)
		o.raw(",")
	}
	o.raw(`"problem_id":`)
	o.str(r.ProblemID)
	o.raw(`,"scheme":`)
	o.str(r.Scheme)
	o.raw(`,"reward":`)
	o.num(r.Reward)
	o.raw(`,"score":`)
	o.num(r.Score)
	o.raw(`,"judge_ok":`)
	o.bool(r.JudgeOK)
	if r.JudgeError != "" {
		o.raw(`,"judge_error":`)
		o.str(r.JudgeError)
	}
	o.raw(`,"correct":`)
	o.bool(r.Correct)
	o.raw(`,"components":`)
	o.values(r.Components)
	o.raw(`,"metrics":`)
	o.values(r.Metrics)
	o.raw(`,"items":`)
	list(o, r.Items, (*jsonOut).itemVerdict)
	o.raw(`,"steps":`)
	list(o, r.Steps, (*jsonOut).stepResult)
	o.raw(`,"error":`)
	o.str(r.Error)
	o.raw("}")
}

func (o *jsonOut) itemVerdict(v *ItemVerdict) {
	o.raw(`{"id":`)
	o.int(int64(v.ID))
	o.raw(`,"type":`)
	o.str(v.Type)
	o.raw(`,"satisfied":`)
	o.bool(v.Satisfied)
	o.raw(`,"step":`)
	o.int(int64(v.Step))
	o.raw("}")
}

func (o *jsonOut) stepResult(s *StepResult) {
	o.raw(`{"step":`)
	o.int(int64(s.Step))
	o.raw(`,"char_start":`)
	o.int(int64(s.CharStart))
	o.raw(`,"char_end":`)
	o.int(int64(s.CharEnd))
	o.raw(`,"byte_start":`)
	o.int(int64(s.ByteStart))
	o.raw(`,"byte_end":`)
	o.int(int64(s.ByteEnd))
	o.raw(`,"delta":`)
	o.num(s.Delta)
	o.raw("}")
}

func (o *jsonOut) advantage(a *Advantage) {
	o.raw(`{"outcome":`)
	o.num(a.Outcome)
	o.raw(`,"process":`)
	o.num(a.Process)
	o.raw(`,"total":`)
	o.num(a.Total)
	o.raw(`,"steps":`)
	list(o, a.Steps, (*jsonOut).stepAdvantage)
	o.raw("}")
}

func (o *jsonOut) stepAdvantage(s *StepAdvantage) {
	o.raw(`{"step":`)
	o.int(int64(s.Step))
	o.raw(`,"offset":`)
	o.num(s.Offset)
	o.raw(`,"advantage":`)
	o.num(s.Advantage)
	o.raw("}")
}

func (o *jsonOut) validity(v *ItemGroupValidity) {
	o.raw(`{"id":`)
	o.int(int64(v.ID))
	o.raw(`,"sat_rate":`)
	if v.SatRate == nil {
		o.raw("null")
	} else {
		o.num(*v.SatRate)
	}
	o.raw(`,"corr":`)
	if v.Corr == nil {
		o.raw("null")
	} else {
		o.num(*v.Corr)
	}
	o.raw(`,"valid":`)
	if v.Valid == nil {
		o.raw("null")
	} else {
		o.bool(*v.Valid)
	}
	o.raw("}")
}

func (o *jsonOut) raw(s string) { o.b = append(o.b, s...) }

// str appends s quoted; a string encoding/json would escape goes through it.
func (o *jsonOut) str(s string) {
	if !plainString(s) {
		q, _ := json.Marshal(s) // a string always encodes
		o.b = append(o.b, q...)
		return
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, s...)
	o.b = append(o.b, '"')
}

func (o *jsonOut) num(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		o.ok = false
		return
	}
	o.b = appendFloat(o.b, f)
}

func (o *jsonOut) int(i int64) { o.b = strconv.AppendInt(o.b, i, 10) }

func (o *jsonOut) bool(v bool) { o.b = strconv.AppendBool(o.b, v) }

func (o *jsonOut) values(v Values) {
	var ok bool
	if o.b, ok = v.appendJSON(o.b); !ok {
		o.ok = false
	}
}
