package discrim

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Replicates is how many bootstrap replicates each 95% interval is read
// from.
const Replicates = 200

// Sample is the rollouts one record is measured on, as the bootstrap
// resamples them: each rollout's side and group. Only a correct and a
// flawed rollout of the same group form a pair (cross-fitting compares
// rollouts scored by one fold's rubric); one group makes every pair count.
type Sample struct {
	correct []bool
	group   []int32
	cells   [][]int32 // sample indexes by group and side
	// pi and pj are the correct and the flawed rollout of each pair (made
	// on first use).
	pi, pj []int32
	made   bool
}

// NewSample is the sample of m's rollouts at pos, in groups group (one per
// position; nil: a single group).
func NewSample(m *Matrix, pos []int, group []int32) *Sample {
	s := &Sample{correct: make([]bool, len(pos)), group: make([]int32, len(pos))}
	cell := map[[2]int32]int{}
	for j, r := range pos {
		s.correct[j] = m.Correct[r]
		if group != nil {
			s.group[j] = group[j]
		}
		key := [2]int32{s.group[j], int32(b2int(s.correct[j]))}
		c, ok := cell[key]
		if !ok {
			c = len(s.cells)
			cell[key] = c
			s.cells = append(s.cells, nil)
		}
		s.cells[c] = append(s.cells[c], int32(j))
	}
	return s
}

// Len is how many rollouts s holds.
func (s *Sample) Len() int { return len(s.correct) }

// Pairs is how many correct × flawed pairs s compares.
func (s *Sample) Pairs() int {
	s.pairs()
	return len(s.pi)
}

// pairs lists the pairs once.
func (s *Sample) pairs() {
	if s.made {
		return
	}
	s.made = true
	for i := range s.correct {
		if !s.correct[i] {
			continue
		}
		for j := range s.correct {
			if !s.correct[j] && s.group[i] == s.group[j] {
				s.pi, s.pj = append(s.pi, int32(i)), append(s.pj, int32(j))
			}
		}
	}
}

// ranked is one series' scores over a sample, ordered by group and score,
// cut into blocks of tied scores.
type ranked struct {
	order  []int32
	blocks []block
}

type block struct {
	start, end int32
	newGroup   bool
}

func (rk *ranked) rank(s *Sample, scores []float64) {
	rk.order = rk.order[:0]
	for j := range scores {
		rk.order = append(rk.order, int32(j))
	}
	slices.SortFunc(rk.order, func(a, b int32) int {
		if s.group[a] != s.group[b] {
			return int(s.group[a] - s.group[b])
		}
		switch {
		case scores[a] < scores[b]:
			return -1
		case scores[a] > scores[b]:
			return 1
		}
		return 0
	})
	rk.blocks = rk.blocks[:0]
	for k := 0; k < len(rk.order); {
		j := rk.order[k]
		end := k + 1
		for end < len(rk.order) {
			next := rk.order[end]
			if s.group[next] != s.group[j] || scores[next]-scores[j] > tieTolerance {
				break
			}
			end++
		}
		rk.blocks = append(rk.blocks, block{start: int32(k), end: int32(end), newGroup: k == 0 || s.group[rk.order[k-1]] != s.group[j]})
		k = end
	}
}

// auroc is the AUROC over the within-group pairs when rollout j of the
// sample counts count[j] times; NaN when no pair is left.
func (rk *ranked) auroc(s *Sample, count []int32) float64 {
	var wins, pairs, below, nc, nf float64
	for _, b := range rk.blocks {
		if b.newGroup {
			pairs += nc * nf
			below, nc, nf = 0, 0, 0
		}
		var gc, gf float64
		for _, j := range rk.order[b.start:b.end] {
			if s.correct[j] {
				gc += float64(count[j])
			} else {
				gf += float64(count[j])
			}
		}
		wins += 2*gc*below + gc*gf
		below += gf
		nc += gc
		nf += gf
	}
	pairs += nc * nf
	if pairs == 0 {
		return math.NaN()
	}
	return wins / (2 * pairs)
}

// Boot accumulates series of per-record AUROCs into their means over the
// records and 95% intervals from a two-level bootstrap: each replicate
// draws every record a Poisson(1) number of times (records resampled with
// replacement, streamed) and, within it, its rollouts with replacement
// within each group and side (so every pair of the record can still form).
// Diffs are series of the difference of two series' AUROCs on the same
// resampled rollouts (a change). A record's draws depend only on its seed,
// so the intervals do not depend on the order records come in beyond the
// last bits of the sums.
type Boot struct {
	series int
	diffs  [][2]int
	// sum and w hold, for each series then each diff, Replicates sums of
	// weighted AUROCs and of weights.
	sum, w   []float64
	pointSum []float64
	pointN   []int64

	rk      []ranked
	outcome [][]float64
	same    []int
	pw      []float64
	count   []int32
	vals    []float64
}

// NewBoot accumulates series series and the given diffs of them.
func NewBoot(series int, diffs [][2]int) *Boot {
	n := series + len(diffs)
	return &Boot{series: series, diffs: diffs, sum: make([]float64, n*Replicates), w: make([]float64, n*Replicates),
		pointSum: make([]float64, n), pointN: make([]int64, n)}
}

// poisson1 is the cumulative distribution of Poisson(1) up to 9.
var poisson1 = func() []float64 {
	out := make([]float64, 10)
	p, c := math.Exp(-1), 0.0
	for k := range out {
		c += p
		out[k] = c
		p /= float64(k + 1)
	}
	return out
}()

// drawPoisson1 draws Poisson(1) from 53 random bits of r.
func drawPoisson1(r uint64) int {
	u := float64(r>>11) / (1 << 53)
	for k, c := range poisson1 {
		if u < c {
			return k
		}
	}
	return len(poisson1)
}

// maxPairsDirect is the most pairs a sample may have for Add to weigh
// every pair directly; larger samples are ranked once per series instead.
const maxPairsDirect = 256

// Add measures one record over sample s: scores[k] are series k's scores
// of s's rollouts, nil when the series is undefined for the record. seed
// (RecordSeed of the record's id) fixes its draws. Series with the same
// outcome on every pair are measured once.
func (b *Boot) Add(seed uint64, s *Sample, scores [][]float64) {
	b.vals = growF(b.vals, b.series+len(b.diffs))
	s.pairs()
	direct := len(s.pi) <= maxPairsDirect
	b.prepare(s, scores, direct)
	b.count = growI(b.count, s.Len())
	for j := range b.count {
		b.count[j] = 1
	}
	b.measure(s, scores, b.count, direct)
	for k, v := range b.vals {
		if !math.IsNaN(v) {
			b.pointSum[k] += v
			b.pointN[k]++
		}
	}
	src := rand.NewPCG(seed, 0x41)
	n := len(b.vals)
	for rep := range Replicates {
		w := drawPoisson1(src.Uint64())
		if w == 0 {
			continue
		}
		clear(b.count)
		for _, cell := range s.cells {
			c := uint64(len(cell))
			for range cell {
				b.count[cell[(uint64(uint32(src.Uint64()))*c)>>32]]++
			}
		}
		b.measure(s, scores, b.count, direct)
		for k, v := range b.vals[:n] {
			if !math.IsNaN(v) {
				b.sum[k*Replicates+rep] += float64(w) * v
				b.w[k*Replicates+rep] += float64(w)
			}
		}
	}
}

// prepare ranks each distinct series once: its outcome on every pair when
// direct (b.outcome[k], shared by series whose outcomes are equal through
// b.same), else its order (b.rk).
func (b *Boot) prepare(s *Sample, scores [][]float64, direct bool) {
	if len(b.rk) < b.series {
		b.rk = make([]ranked, b.series)
		b.outcome = make([][]float64, b.series)
		b.same = make([]int, b.series)
	}
	for k, sc := range scores[:b.series] {
		b.same[k] = k
		if sc == nil {
			continue
		}
		if !direct {
			b.rk[k].rank(s, sc)
			continue
		}
		o := b.outcome[k][:0]
		for p := range s.pi {
			a, f := sc[s.pi[p]], sc[s.pj[p]]
			switch {
			case math.Abs(a-f) <= tieTolerance:
				o = append(o, 0.5)
			case a > f:
				o = append(o, 1)
			default:
				o = append(o, 0)
			}
		}
		b.outcome[k] = o
		for j := range k {
			if scores[j] != nil && b.same[j] == j && slices.Equal(b.outcome[j], o) {
				b.same[k] = j
				break
			}
		}
	}
}

// measure fills b.vals with every series' and diff's value under count.
func (b *Boot) measure(s *Sample, scores [][]float64, count []int32, direct bool) {
	if direct {
		b.pw = growF(b.pw, len(s.pi))
		den := 0.0
		for p := range s.pi {
			b.pw[p] = float64(count[s.pi[p]]) * float64(count[s.pj[p]])
			den += b.pw[p]
		}
		for k := range b.series {
			switch {
			case scores[k] == nil || den == 0:
				b.vals[k] = math.NaN()
			case b.same[k] != k:
				b.vals[k] = b.vals[b.same[k]]
			default:
				num := 0.0
				pw := b.pw[:len(b.outcome[k])]
				for p, o := range b.outcome[k] {
					num += pw[p] * o
				}
				b.vals[k] = num / den
			}
		}
	} else {
		for k := range b.series {
			b.vals[k] = math.NaN()
			if scores[k] != nil {
				b.vals[k] = b.rk[k].auroc(s, count)
			}
		}
	}
	for d, pr := range b.diffs {
		b.vals[b.series+d] = b.vals[pr[0]] - b.vals[pr[1]]
	}
}

// Merge adds o (of the same series and diffs) into b.
func (b *Boot) Merge(o *Boot) {
	for i := range b.sum {
		b.sum[i] += o.sum[i]
		b.w[i] += o.w[i]
	}
	for k := range b.pointSum {
		b.pointSum[k] += o.pointSum[k]
		b.pointN[k] += o.pointN[k]
	}
}

// Estimate is a mean over records with its 95% interval.
type Estimate struct {
	Records int64      `json:"records"`
	Mean    float64    `json:"mean"`
	CI95    [2]float64 `json:"ci95"`
}

// Estimate is series (or, from Series on, diff) k's mean over the records
// it is defined for, and the 2.5% and 97.5% quantiles of its replicates'
// means; Records 0 when no record has it.
func (b *Boot) Estimate(k int) Estimate {
	e := Estimate{Records: b.pointN[k]}
	if e.Records == 0 {
		return e
	}
	e.Mean = b.pointSum[k] / float64(e.Records)
	var means []float64
	for rep := range Replicates {
		if w := b.w[k*Replicates+rep]; w > 0 {
			means = append(means, b.sum[k*Replicates+rep]/w)
		}
	}
	if len(means) == 0 {
		e.CI95 = [2]float64{e.Mean, e.Mean}
		return e
	}
	slices.Sort(means)
	e.CI95 = [2]float64{quantile(means, 0.025), quantile(means, 0.975)}
	return e
}

// Series is how many series b holds (diffs follow them).
func (b *Boot) Series() int { return b.series }

// quantile is the q-quantile of sorted xs, interpolated between order
// statistics.
func quantile(xs []float64, q float64) float64 {
	h := q * float64(len(xs)-1)
	lo := int(math.Floor(h))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (h-float64(lo))*(xs[hi]-xs[lo])
}

// RecordSeed is the bootstrap seed of a record: FNV-1a of its id.
func RecordSeed(id string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * fnvPrime
	}
	return h
}

func growF(xs []float64, n int) []float64 {
	if cap(xs) < n {
		return make([]float64, n)
	}
	return xs[:n]
}

func growI(xs []int32, n int) []int32 {
	if cap(xs) < n {
		return make([]int32, n)
	}
	return xs[:n]
}

// SampleAUROC is the AUROC of scores over s's pairs (every rollout
// counted once); ok is false when s has no pair.
func SampleAUROC(s *Sample, scores []float64) (auroc float64, ok bool) {
	s.pairs()
	if len(s.pi) == 0 {
		return 0, false
	}
	wins := 0
	for p := range s.pi {
		a, f := scores[s.pi[p]], scores[s.pj[p]]
		switch {
		case math.Abs(a-f) <= tieTolerance:
			wins++
		case a > f:
			wins += 2
		}
	}
	return float64(wins) / float64(2*len(s.pi)), true
}
