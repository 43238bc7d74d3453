package discrim

import "github.com/rubricforge/rubricforge/reward"

// RubricScore names the rubric score figure.
const RubricScore = "rubric"

// DefaultScheme names the record's own scheme.
const DefaultScheme = "default"

// Figure is one measured reward.
type Figure struct {
	Scheme     string
	WithAnswer bool
}

// Version is one rubric over a matrix's items.
type Version struct {
	Keep    []int
	Weights []float64
}

// SourceVersion is not written yet.
func SourceVersion(m *Matrix) Version { return Version{} }

// Scorer is not written yet.
type Scorer struct{ Params reward.Params }

// Scores is not written yet.
func (s *Scorer) Scores(dst []float64, m *Matrix, v Version, f Figure, pos, group []int) ([]float64, bool) {
	return nil, false
}
