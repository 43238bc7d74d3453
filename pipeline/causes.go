package pipeline

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Cause is the most common reason of a stage's failures: the reason as
// written in failures.jsonl (or, for the answers a stage left without a
// verdict, the error that left them so), with every number written as N so
// that the same cause on another problem, question or answer counts as one.
type Cause struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"` // failures with this reason
	Of     int64  `json:"of"`    // failures of the stage in all
}

// causes counts failure reasons by stage, for the report's most common
// cause of each stage's failures. A stage keeps at most maxCauses distinct
// reasons; later new ones are counted under otherCauses. Safe for
// concurrent use (the collector and the workers add to it).
type causes struct {
	mu      sync.Mutex
	byStage map[string]map[string]int64
}

const (
	maxCauses      = 256
	maxCauseLength = 300
	otherCauses    = "(other reasons)"
)

var causeNumbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// causeOf is reason with its numbers written as N (an HTTP status is
// kept), cut to maxCauseLength.
func causeOf(reason string) string {
	var b strings.Builder
	last := 0
	for _, m := range causeNumbers.FindAllStringIndex(reason, -1) {
		b.WriteString(reason[last:m[0]])
		if strings.HasSuffix(reason[:m[0]], "HTTP ") {
			b.WriteString(reason[m[0]:m[1]])
		} else {
			b.WriteString("N")
		}
		last = m[1]
	}
	b.WriteString(reason[last:])
	s := b.String()
	if len(s) > maxCauseLength {
		cut := maxCauseLength
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + " ..."
	}
	return s
}

func (c *causes) add(stage, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byStage == nil {
		c.byStage = map[string]map[string]int64{}
	}
	m := c.byStage[stage]
	if m == nil {
		m = map[string]int64{}
		c.byStage[stage] = m
	}
	key := causeOf(reason)
	if _, ok := m[key]; !ok && len(m) >= maxCauses {
		key = otherCauses
	}
	m[key]++
}

// top is each stage's most common cause (ties: the reason that sorts first).
func (c *causes) top() map[string]Cause {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byStage) == 0 {
		return nil
	}
	out := map[string]Cause{}
	for stage, m := range c.byStage {
		reasons := make([]string, 0, len(m))
		var total int64
		for r, n := range m {
			reasons = append(reasons, r)
			total += n
		}
		sort.Slice(reasons, func(i, j int) bool {
			if m[reasons[i]] != m[reasons[j]] {
				return m[reasons[i]] > m[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		out[stage] = Cause{Reason: reasons[0], Count: m[reasons[0]], Of: total}
	}
	return out
}
