package discrim

// taroneK is not written yet.
func taroneK(mins []float64, alpha float64) int { return 0 }

// ProbLower is not written yet.
func ProbLower(goodCorrect, nCorrect, goodFlawed, nFlawed int) float64 { return 0 }
