package reward

import (
	"reflect"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestScoreGroupReusesMemory: a group scored in reused memory is the group
// ScoreGroup returns, whatever the scheme and the group scored before.
func TestScoreGroupReusesMemory(t *testing.T) {
	items := benchRubric()
	lab := testLabel(items)
	groups := [][]Rollout{benchGroup(16, items), benchGroup(3, items[:4]), benchGroup(20, items)}
	groups[1][1].Verdicts, groups[1][1].JudgeErr = nil, "satisfaction judge: down"
	var mem groupMemory
	for _, scheme := range schema.Schemes {
		for _, rs := range groups {
			mem.reset()
			got := scoreGroup(DefaultParams(), scheme, lab, rs, &mem)
			if want := ScoreGroup(DefaultParams(), scheme, lab, rs); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, %d rollouts: reused memory gives\n%+v\nnot\n%+v", scheme, len(rs), got.Results[0], want.Results[0])
			}
		}
	}
}

func TestSlab(t *testing.T) {
	var s slab[int]
	if a := s.take(0); a == nil {
		t.Fatal("an empty take is nil")
	}
	a := s.take(3)
	a[0] = 7
	b := s.take(2)
	if len(a) != 3 || cap(a) != 3 || len(b) != 2 || a[0] != 7 {
		t.Fatalf("takes %v %v", a, b)
	}
	s.reset()
	if c := s.take(3); c[0] != 0 {
		t.Fatalf("a take after reset is not zeroed: %v", c)
	}
}

// TestGroupScratchBytes: a scratch counts the memory of what it holds, so
// that one large group's is not kept.
func TestGroupScratchBytes(t *testing.T) {
	sc := getGroupScratch()
	small := sc.bytes()
	sc.mem.items.take(maxPooledBuffer / 32)
	if sc.bytes() < small+maxPooledBuffer {
		t.Fatalf("%d bytes after taking %d item verdicts", sc.bytes(), maxPooledBuffer/32)
	}
	putGroupScratch(sc)
}
