package judgestats

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
	var agree float64
	var ratings int64
	var byCategory []int64
	for _, row := range counts {
		var n int64
		for _, c := range row {
			n += c
		}
		if n < 2 {
			continue
		}
		items++
		ratings += n
		var pairs int64
		for j, c := range row {
			pairs += c * (c - 1)
			if j >= len(byCategory) {
				byCategory = append(byCategory, make([]int64, j+1-len(byCategory))...)
			}
			byCategory[j] += c
		}
		agree += float64(pairs) / float64(n*(n-1))
	}
	used := 0
	for _, c := range byCategory {
		if c > 0 {
			used++
		}
	}
	if items == 0 || used < 2 {
		return 0, items, false
	}
	pbar := agree / float64(items)
	var pe float64
	for _, c := range byCategory {
		p := float64(c) / float64(ratings)
		pe += p * p
	}
	return (pbar - pe) / (1 - pe), items, true
}

// FleissVotes is FleissKappa of yes/no votes: votes[i] are the panel's
// votes on item i, a failed vote (OK false) left out of the item's
// ratings rather than counted as a no. Majority counts a failure against
// the verdict; agreement is about what the judges that answered said.
func FleissVotes(votes [][]Vote) (kappa float64, items int64, ok bool) {
	counts := make([][]int64, len(votes))
	for i, item := range votes {
		row := make([]int64, 2)
		for _, v := range item {
			switch {
			case !v.OK:
			case v.Yes:
				row[0]++
			default:
				row[1]++
			}
		}
		counts[i] = row
	}
	return FleissKappa(counts)
}
