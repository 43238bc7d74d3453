package judgestats

// PanelErrors is not written yet.
func PanelErrors(disagree [][]float64) ([]float64, bool) { return nil, false }

// MajorityError is not written yet.
func MajorityError(e []float64) float64 { return 0 }
