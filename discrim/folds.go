package discrim

// DefaultFolds is how many folds cross-fitting uses by default.
const DefaultFolds = 4

// Folds is not written yet.
func Folds(m *Matrix, k int) []int32 { return make([]int32, m.Rollouts()) }

// Without is not written yet.
func Without(folds []int32, g int32) []int { return nil }
