package discrim

// Replicates is how many bootstrap replicates each interval is read from.
const Replicates = 200

// Sample is not written yet.
type Sample struct{}

// NewSample is not written yet.
func NewSample(m *Matrix, pos []int, group []int32) *Sample { return &Sample{} }

// Pairs is not written yet.
func (s *Sample) Pairs() int { return 0 }

// Boot is not written yet.
type Boot struct{}

// NewBoot is not written yet.
func NewBoot(series int, diffs [][2]int) *Boot { return &Boot{} }

// Add is not written yet.
func (b *Boot) Add(seed uint64, s *Sample, scores [][]float64) {}

// Merge is not written yet.
func (b *Boot) Merge(o *Boot) {}

// Estimate is a mean with its interval.
type Estimate struct {
	Records int64
	Mean    float64
	CI95    [2]float64
}

// Estimate is not written yet.
func (b *Boot) Estimate(k int) Estimate { return Estimate{} }

// RecordSeed is not written yet.
func RecordSeed(id string) uint64 { return 0 }
