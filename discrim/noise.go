package discrim

// WithinPhi is not written yet.
func WithinPhi(m *Matrix, rollouts []int, a, b int) float64 { return 0 }

// StratifiedAssociationP is not written yet.
func StratifiedAssociationP(m *Matrix, rollouts []int, a, b int) float64 { return 1 }

// FlipsExplain is not written yet.
func FlipsExplain(n int, eps float64) int { return 0 }

// BenjaminiHochberg is not written yet.
func BenjaminiHochberg(p []float64) []float64 { return p }
