package synthcorpus

// RedundantSource is not exported yet.
func RedundantSource(kinds []Kind, k int) int { return redundantSource(kinds, k) }
