package judgestats

// Fleiss accumulates Fleiss' kappa of a panel of judges who put items into
// categories, one item at a time (Add), so a corpus's items need not be
// held at once. Its zero value is an empty table.
type Fleiss struct {
	agree      float64 // Σ P_i over the items that took part
	items      int64
	ratings    int64
	byCategory []int64
}

// Add counts one item: counts[j] judges put it in category j. An item with
// fewer than two ratings says nothing about agreement and is left out.
func (f *Fleiss) Add(counts []int64) {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n < 2 {
		return
	}
	f.items++
	f.ratings += n
	var pairs int64
	for j, c := range counts {
		pairs += c * (c - 1)
		if j >= len(f.byCategory) {
			f.byCategory = append(f.byCategory, make([]int64, j+1-len(f.byCategory))...)
		}
		f.byCategory[j] += c
	}
	f.agree += float64(pairs) / float64(n*(n-1))
}

// AddVotes counts one item's yes/no votes, a failed vote (OK false) left
// out of its ratings rather than counted as a no: Majority counts a
// failure against the verdict, but agreement is about what the judges
// that answered said.
func (f *Fleiss) AddVotes(votes []Vote) {
	var counts [2]int64
	for _, v := range votes {
		switch {
		case !v.OK:
		case v.Yes:
			counts[0]++
		default:
			counts[1]++
		}
	}
	f.Add(counts[:])
}

// Kappa is Fleiss' kappa of the items added; items counts those that took
// part (see FleissKappa).
func (f *Fleiss) Kappa() (kappa float64, items int64, ok bool) {
	used := 0
	for _, c := range f.byCategory {
		if c > 0 {
			used++
		}
	}
	if f.items == 0 || used < 2 {
		return 0, f.items, false
	}
	pbar := f.agree / float64(f.items)
	var pe float64
	for _, c := range f.byCategory {
		p := float64(c) / float64(f.ratings)
		pe += p * p
	}
	return (pbar - pe) / (1 - pe), f.items, true
}

// FleissKappa is Fleiss' kappa of a panel of judges who put items into
// categories: counts[i][j] is how many judges put item i in category j.
// Items may have different numbers of ratings (a judge that failed on an
// item did not rate it; its failure is not an opinion about the item), and
// an item with fewer than two ratings says nothing about agreement and is
// left out; items counts those that took part. With every item rated by
// the same m judges it is Fleiss' (1971) kappa:
//
//	P_i = Σ_j n_ij (n_ij - 1) / (n_i (n_i - 1))   the share of agreeing pairs on item i
//	P̄   = the mean of P_i over the items
//	p_j = Σ_i n_ij / Σ_i n_i                      the share of ratings in category j
//	P_e = Σ_j p_j²                                the agreement expected by chance
//	κ   = (P̄ - P_e) / (1 - P_e)
//
// κ is 1 when every item's judges agree, about 0 when they agree as often
// as judges rating at random with the panel's overall shares would, and
// negative below that. ok is false when no item has two ratings, or when
// every rating is in one category (P_e = 1: decided on the counts, not by
// comparing floats).
func FleissKappa(counts [][]int64) (kappa float64, items int64, ok bool) {
	var f Fleiss
	for _, row := range counts {
		f.Add(row)
	}
	return f.Kappa()
}

// FleissVotes is FleissKappa of yes/no votes: votes[i] are the panel's
// votes on item i (see Fleiss.AddVotes).
func FleissVotes(votes [][]Vote) (kappa float64, items int64, ok bool) {
	var f Fleiss
	for _, item := range votes {
		f.AddVotes(item)
	}
	return f.Kappa()
}
