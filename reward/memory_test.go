package reward

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestScoreGroupReusesMemory: a group scored in reused memory is the group
// ScoreGroup returns, whatever the scheme and the group scored before.
func TestScoreGroupReusesMemory(t *testing.T) {
	items := rewardtest.BenchRubric()
	lab := rewardtest.Label(items)
	groups := [][]Rollout{rewardtest.BenchGroup(16, items, judged), rewardtest.BenchGroup(3, items[:4], judged), rewardtest.BenchGroup(20, items, judged)}
	groups[1][1].Verdicts, groups[1][1].JudgeErr = nil, "satisfaction judge: down"
	var mem GroupMemory
	for _, scheme := range schema.Schemes {
		for _, rs := range groups {
			mem.Reset()
			got := ScoreGroupIn(DefaultParams(), OnJudgeFailureFloor, scheme, lab, rs, &mem)
			if want := ScoreGroup(DefaultParams(), scheme, lab, rs); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %d rollouts: reused memory gives\n%+v\nnot\n%+v", scheme, len(rs), got.Results[0], want.Results[0])
			}
		}
	}
}

// TestGroupMemoryBytes: a group's memory counts what it holds, so that
// rewardd does not keep the memory of one large group for the next.
func TestGroupMemoryBytes(t *testing.T) {
	var mem GroupMemory
	const n = 1 << 15
	mem.items.Take(n)
	if got, least := mem.Bytes(), n*int(unsafe.Sizeof(ItemVerdict{})); got < least {
		t.Fatalf("%d bytes after taking %d item verdicts; want at least %d", got, n, least)
	}
}
