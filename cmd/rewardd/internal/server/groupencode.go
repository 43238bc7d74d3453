package server

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/rubricforge/rubricforge/internal/jsonenc"
	"github.com/rubricforge/rubricforge/reward"
)

// appendJSON appends g as json.Encoder.Encode writes it, newline included,
// without reflection or allocations. It reports false, having appended part
// of it, at a number encoding/json refuses (NaN, ±Inf) or a components or
// metrics key that needs escaping: the caller then lets encoding/json
// answer.
func (g *groupJSON) appendJSON(b []byte) ([]byte, bool) {
	o := jsonOut{ok: true}
	b = append(b, `{"results":`...)
	b = list(&o, b, g.Results, (*jsonOut).result)
	b = append(b, `,"advantages":`...)
	b = list(&o, b, g.Advantages, (*jsonOut).advantage)
	b = append(b, `,"validity":`...)
	b = list(&o, b, g.Validity, (*jsonOut).validity)
	b = o.loops(b, g)
	if g.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, g.Error)
	}
	return append(b, "}\n"...), o.ok
}

// jsonOut's methods append JSON text to the slice they are given and return
// it; ok turns false at what appendJSON leaves to encoding/json. (The text
// is passed along, not kept in jsonOut, so that appending is not a pointer
// write into memory the collector has to be told about.)
type jsonOut struct{ ok bool }

// list appends xs as a JSON list (null when nil), each with each.
func list[T any](o *jsonOut, b []byte, xs []T, each func(*jsonOut, []byte, *T) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(o, b, &xs[i])
	}
	return append(b, ']')
}

func (o *jsonOut) result(b []byte, r *reward.Result) []byte {
	b = append(b, '{')
	if r.RequestID != "" {
		b = append(b, `"request_id":`...)
		b = appendString(b, r.RequestID)
		b = append(b, ',')
	}
	b = append(b, `"problem_id":`...)
	b = appendString(b, r.ProblemID)
	b = append(b, `,"scheme":`...)
	b = appendString(b, r.Scheme)
	b = append(b, `,"reward":`...)
	b = o.num(b, r.Reward)
	b = append(b, `,"score":`...)
	b = o.num(b, r.Score)
	b = append(b, `,"judge_ok":`...)
	b = strconv.AppendBool(b, r.JudgeOK)
	if r.JudgeError != "" {
		b = append(b, `,"judge_error":`...)
		b = appendString(b, r.JudgeError)
	}
	if r.Empty {
		b = append(b, `,"empty":true`...)
	}
	b = append(b, `,"correct":`...)
	b = strconv.AppendBool(b, r.Correct)
	if r.CutOff != "" {
		b = append(b, `,"cut_off":`...)
		b = appendString(b, r.CutOff)
	}
	b = append(b, `,"components":`...)
	b = o.values(b, r.Components)
	b = append(b, `,"metrics":`...)
	b = o.values(b, r.Metrics)
	b = append(b, `,"items":`...)
	b = list(o, b, r.Items, (*jsonOut).itemVerdict)
	b = append(b, `,"steps":`...)
	b = list(o, b, r.Steps, (*jsonOut).stepResult)
	if len(r.Criteria) > 0 {
		o.ok = false // a grounded result: encoding/json writes its criteria
	}
	b = append(b, `,"error":`...)
	b = appendString(b, r.Error)
	if r.Note != "" {
		b = append(b, `,"note":`...)
		b = appendString(b, r.Note)
	}
	if r.RubricVersion != 0 {
		b = append(b, `,"rubric_version":`...)
		b = strconv.AppendInt(b, r.RubricVersion, 10)
	}
	if r.OffPolicy {
		b = append(b, `,"off_policy":true`...)
	}
	return append(b, '}')
}

func (o *jsonOut) itemVerdict(b []byte, v *reward.ItemVerdict) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(v.ID), 10)
	b = append(b, `,"type":`...)
	b = appendString(b, v.Type)
	b = append(b, `,"satisfied":`...)
	b = strconv.AppendBool(b, v.Satisfied)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(v.Step), 10)
	return append(b, '}')
}

func (o *jsonOut) stepResult(b []byte, s *reward.StepResult) []byte {
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(s.Step), 10)
	b = append(b, `,"char_start":`...)
	b = strconv.AppendInt(b, int64(s.CharStart), 10)
	b = append(b, `,"char_end":`...)
	b = strconv.AppendInt(b, int64(s.CharEnd), 10)
	b = append(b, `,"byte_start":`...)
	b = strconv.AppendInt(b, int64(s.ByteStart), 10)
	b = append(b, `,"byte_end":`...)
	b = strconv.AppendInt(b, int64(s.ByteEnd), 10)
	b = append(b, `,"delta":`...)
	b = o.num(b, s.Delta)
	return append(b, '}')
}

func (o *jsonOut) advantage(b []byte, a *reward.Advantage) []byte {
	b = append(b, `{"outcome":`...)
	b = o.num(b, a.Outcome)
	b = append(b, `,"process":`...)
	b = o.num(b, a.Process)
	b = append(b, `,"total":`...)
	b = o.num(b, a.Total)
	b = append(b, `,"steps":`...)
	b = list(o, b, a.Steps, (*jsonOut).stepAdvantage)
	return append(b, '}')
}

func (o *jsonOut) stepAdvantage(b []byte, s *reward.StepAdvantage) []byte {
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(s.Step), 10)
	b = append(b, `,"offset":`...)
	b = o.num(b, s.Offset)
	b = append(b, `,"advantage":`...)
	b = o.num(b, s.Advantage)
	return append(b, '}')
}

func (o *jsonOut) validity(b []byte, v *reward.ItemGroupValidity) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(v.ID), 10)
	b = append(b, `,"sat_rate":`...)
	b = o.optionalNum(b, v.SatRate)
	b = append(b, `,"corr":`...)
	b = o.optionalNum(b, v.Corr)
	b = append(b, `,"valid":`...)
	if v.Valid == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, *v.Valid)
	}
	return append(b, '}')
}

// appendString appends s quoted; a string encoding/json would escape goes
// through it.
func appendString(b []byte, s string) []byte {
	if !jsonenc.PlainString(s) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func (o *jsonOut) num(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		o.ok = false
		return b
	}
	return jsonenc.AppendFloat(b, f)
}

func (o *jsonOut) optionalNum(b []byte, f *float64) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	return o.num(b, *f)
}

func (o *jsonOut) values(b []byte, v reward.Values) []byte {
	b, ok := v.AppendJSON(b)
	o.ok = o.ok && ok
	return b
}

// loops appends the rubricator's results and the guidance, when the group
// has them, as encoding/json writes them.
func (o *jsonOut) loops(b []byte, g *groupJSON) []byte {
	for _, f := range []struct {
		key     string
		present bool
		v       any
	}{{`,"rubricator":`, g.Rubricator != nil, g.Rubricator}, {`,"guidance":`, g.Guidance != nil, g.Guidance}} {
		if !f.present {
			continue
		}
		raw, err := json.Marshal(f.v)
		if err != nil {
			o.ok = false
			return b
		}
		b = append(b, f.key...)
		b = append(b, raw...)
	}
	return b
}
