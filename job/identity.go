package job

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// idEncodingVersion versions the byte encoding hashed into problem ids.
const idEncodingVersion = "rubricforge-problem-id/1"

// ProblemID is the id of a problem without an id of its own: 16 hex digits of
// xxhash64 over a versioned, length-prefixed encoding of the trimmed problem
// text and ground truth, so that no two different (text, answer) pairs share
// an encoding.
func ProblemID(text, answer string) string {
	d := xxhash.New()
	var n [binary.MaxVarintLen64]byte
	for _, field := range []string{idEncodingVersion, strings.TrimSpace(text), strings.TrimSpace(answer)} {
		d.Write(n[:binary.PutUvarint(n[:], uint64(len(field)))])
		d.WriteString(field)
	}
	return fmt.Sprintf("%016x", d.Sum64())
}

// SplitOf assigns train, validation or test deterministically from the id.
func SplitOf(id string, f SplitFractions) string {
	u := float64(xxhash.Sum64String("split/"+id)%1_000_000) / 1_000_000
	switch {
	case u < f.Test:
		return "test"
	case u < f.Test+f.Validation:
		return "validation"
	default:
		return "train"
	}
}
