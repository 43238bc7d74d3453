package sim

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plant makes the simulated distiller and satisfaction judge plant rubric
// items of known kinds in known proportions, so that a test can check that
// discrimination statistics and `distill refine` find them. Nil (the
// default) leaves the simulator as it always was.
//
// Every distilled item other than ANSWER and FACTUAL (which check the final
// result and keep their usual behaviour, [PlantedAnswer]) gets a kind drawn
// from the problem, the item's type and text, and [Config.Seed], with
// these shares; the rest are [PlantedAligned]. Each aligned item is followed,
// with probability Redundant, by a paraphrase of it ([PlantedRedundant]) that
// the judge grades exactly as it grades the original. The kind is never
// written into a reply: a test reads it with [Server.PlantedKind].
type Plant struct {
	Misaligned float64 // satisfied more by flawed rollouts than by correct ones
	Saturated  float64 // good on every rollout
	Dead       float64 // good on no rollout
	Noise      float64 // good on half the rollouts, whatever their correctness
	Redundant  float64 // chance an aligned item gets a paraphrase right after it
	// JudgeNoise is the chance each satisfaction verdict is flipped, drawn
	// per rollout and item (a paraphrase shares its original's draw).
	JudgeNoise float64
	// ParaphraseNoise is the chance a paraphrase's verdict is flipped
	// again on a draw of its own, so that its verdict vector is its
	// original's with noise (two wordings a judge does not grade alike).
	ParaphraseNoise float64
	// FewCorrect is the share of problems solved rarely: their correct
	// rate is drawn from 0.03 to 0.15 instead of around
	// Config.CorrectRate, so their records hold a correct rollout or two.
	FewCorrect float64
}

// ItemKind is what a planted rubric item was built to be.
type ItemKind string

// The planted kinds.
const (
	PlantedAligned    ItemKind = "aligned"
	PlantedMisaligned ItemKind = "misaligned"
	PlantedSaturated  ItemKind = "saturated"
	PlantedDead       ItemKind = "dead"
	PlantedRedundant  ItemKind = "redundant"
	PlantedNoise      ItemKind = "noise"
	PlantedAnswer     ItemKind = "answer" // ANSWER and FACTUAL items: the final result, never planted
)

// Good-side satisfaction rates (x = s, or 1 - s for PITFALL) of the
// planted kinds that depend on correctness.
const (
	plantGoodIfCorrect = 0.75
	plantGoodIfFlawed  = 0.25
)

// paraphrasePrefix starts every planted paraphrase; what follows is its
// original's text with the first letter lower-cased. No line of the
// simulator's rubric banks starts with it.
const paraphrasePrefix = "In other words, "

// paraphrase rewrites an item's text as a planted redundant item says it.
func paraphrase(text string) string {
	r, n := utf8.DecodeRuneInString(text)
	return paraphrasePrefix + string(unicode.ToLower(r)) + text[n:]
}

// paraphrased returns the original text of a planted paraphrase.
func paraphrased(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, paraphrasePrefix)
	if !ok || rest == "" {
		return "", false
	}
	r, n := utf8.DecodeRuneInString(rest)
	return string(unicode.ToUpper(r)) + rest[n:], true
}

// PlantedKind is the kind the server planted for the item of a problem's
// rubric with this type and text (as the corpus stores them); false when
// the server plants nothing.
func (s *Server) PlantedKind(problem, itemType, text string) (ItemKind, bool) {
	if s.cfg.Plant == nil {
		return "", false
	}
	if _, ok := paraphrased(text); ok {
		return PlantedRedundant, true
	}
	return s.baseKind(strings.TrimSpace(problem), itemType, text), true
}

// baseKind is the kind of an item that is not a paraphrase.
func (s *Server) baseKind(problem, itemType, text string) ItemKind {
	switch strings.ToUpper(itemType) {
	case "ANSWER", "FACTUAL":
		return PlantedAnswer
	}
	p := s.cfg.Plant
	u := unit(key(s.cfg.Seed, "plant", problem, strings.ToUpper(itemType), text))
	for _, k := range []struct {
		share float64
		kind  ItemKind
	}{{p.Misaligned, PlantedMisaligned}, {p.Saturated, PlantedSaturated}, {p.Dead, PlantedDead}, {p.Noise, PlantedNoise}} {
		if u < k.share {
			return k.kind
		}
		u -= k.share
	}
	return PlantedAligned
}

// withParaphrases appends, after each aligned item, a paraphrase of it with
// probability Plant.Redundant, as long as the rubric stays within room
// items. texts are the items' texts, types their types.
func (s *Server) withParaphrases(problem string, types, texts []string, r *rng, room int) ([]string, []string) {
	var outTypes, outTexts []string
	extra := room - len(texts)
	for i, text := range texts {
		outTypes, outTexts = append(outTypes, types[i]), append(outTexts, text)
		if extra > 0 && s.baseKind(problem, types[i], text) == PlantedAligned && r.chance(s.cfg.Plant.Redundant) {
			outTypes, outTexts = append(outTypes, types[i]), append(outTexts, paraphrase(text))
			extra--
		}
	}
	return outTypes, outTexts
}

// plantedSatisfied is the judge's verdict on one item of a planted rubric
// for one solution: by the item's kind (a paraphrase as its original) and
// the solution's correctness, then flipped at the judge-noise rate.
// requestKey makes the draws differ from rollout to rollout.
func (s *Server) plantedSatisfied(problem string, it item, correct bool, requestKey uint64) bool {
	text := it.Text
	if orig, ok := paraphrased(it.Text); ok {
		text = orig
	}
	kind := s.baseKind(problem, it.Type, text)
	ir := newRNG(newKeyer(requestKey).str("planted").str(it.Type).str(text).sum())
	var sat bool
	if kind == PlantedAnswer {
		sat = ir.chance(satisfyProbability(it.Type, correct))
	} else {
		good := ir.chance(plantedGoodRate(kind, correct))
		sat = good != (strings.ToUpper(it.Type) == "PITFALL")
	}
	if ir.chance(s.cfg.Plant.JudgeNoise) {
		sat = !sat
	}
	if text != it.Text && s.cfg.Plant.ParaphraseNoise > 0 {
		pr := newRNG(newKeyer(requestKey).str("paraphrase").str(it.Type).str(it.Text).sum())
		if pr.chance(s.cfg.Plant.ParaphraseNoise) {
			sat = !sat
		}
	}
	return sat
}

// plantedGoodRate is the chance an item of a planted kind is on its good
// side for a correct or a flawed solution.
func plantedGoodRate(kind ItemKind, correct bool) float64 {
	switch kind {
	case PlantedSaturated:
		return 1
	case PlantedDead:
		return 0
	case PlantedNoise:
		return 0.5
	case PlantedMisaligned:
		correct = !correct
	}
	if correct {
		return plantGoodIfCorrect
	}
	return plantGoodIfFlawed
}

// ParsePlant reads a Plant from its flag form: comma-separated name=rate
// pairs, names misaligned, saturated, dead, noise, redundant, judge-noise,
// paraphrase-noise and few-correct, each rate in [0, 1], e.g.
// "misaligned=0.12,saturated=0.1,dead=0.1,judge-noise=0.001". The first
// four are shares of one draw and may add up to 1 at most.
func ParsePlant(spec string) (*Plant, error) {
	p := &Plant{}
	fields := map[string]*float64{"misaligned": &p.Misaligned, "saturated": &p.Saturated, "dead": &p.Dead,
		"noise": &p.Noise, "redundant": &p.Redundant, "judge-noise": &p.JudgeNoise,
		"paraphrase-noise": &p.ParaphraseNoise, "few-correct": &p.FewCorrect}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		dst, known := fields[name]
		if !ok || !known {
			return nil, fmt.Errorf("plant: %q is not name=rate with a name of misaligned, saturated, dead, noise, redundant, judge-noise, paraphrase-noise, few-correct", part)
		}
		if seen[name] {
			return nil, fmt.Errorf("plant: %s given twice", name)
		}
		seen[name] = true
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("plant: %s=%s: want a rate from 0 to 1", name, value)
		}
		*dst = v
	}
	if sum := p.Misaligned + p.Saturated + p.Dead + p.Noise; sum > 1 {
		return nil, fmt.Errorf("plant: misaligned, saturated, dead and noise add up to %g; they are shares of the items and may add up to 1 at most", sum)
	}
	return p, nil
}
