package reward

import (
	"github.com/rubricforge/rubricforge/internal/slab"
)

// GroupMemory is what a group's results are carved from: ScoreGroup uses a
// new one; a caller that scores group after group (rewardd) keeps one,
// Resets it and passes it to ScoreGroupIn. The zero GroupMemory is ready.
type GroupMemory struct {
	results        slab.Slab[Result]
	scored         slab.Slab[scored]
	items          slab.Slab[ItemVerdict]
	steps          slab.Slab[StepResult]
	advantages     slab.Slab[Advantage]
	stepAdvantages slab.Slab[StepAdvantage]
	maps           []Values // every map handed out since reset, to clear and hand out again
	mapsOut        int
}

// Reset makes all of m free for the next group; the groups scored in it
// before share its memory and must no longer be used.
func (m *GroupMemory) Reset() {
	m.results.Reset()
	m.scored.Reset()
	m.items.Reset()
	m.steps.Reset()
	m.advantages.Reset()
	m.stepAdvantages.Reset()
	m.mapsOut = 0
}

// Bytes is about how much memory m holds.
func (m *GroupMemory) Bytes() int {
	const mapBytes = 256 // a map of up to eight entries
	return m.results.Bytes() + m.scored.Bytes() + m.items.Bytes() + m.steps.Bytes() + m.advantages.Bytes() +
		m.stepAdvantages.Bytes() + len(m.maps)*mapBytes
}

// values returns an empty map.
func (m *GroupMemory) values() Values {
	if m.mapsOut == len(m.maps) {
		m.maps = append(m.maps, make(Values, 8))
	}
	v := m.maps[m.mapsOut]
	m.mapsOut++
	clear(v)
	return v
}
