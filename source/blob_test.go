package source

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// randomBase64 is n characters of base64 of random bytes.
func randomBase64(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n*3/4+3)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// wrappedWithZeros is base64 of binary data with runs of zero bytes (as a
// PNG has), wrapped at 76 columns: lines of "AAAA..." among the others,
// each of one case, and a short last line.
func wrappedWithZeros() string {
	r := rand.New(rand.NewPCG(3, 4))
	var b []byte
	for i := range 6000 {
		if i%1000 < 300 {
			b = append(b, 0)
		} else {
			b = append(b, byte(r.IntN(256)))
		}
	}
	enc := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(enc) > 76 {
		out.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	out.WriteString(enc + "\n")
	return out.String()
}

// TestBlobsAreNotText: a data-URI image or a run of base64 data is never
// part of a passage with text: it is a passage of its own, marked to be
// left out before any request with a reason that names it; a passage over
// the limit (one word longer than --passage-chars) is marked too; the
// document's analysis does not read a blob (issue 43, item 4: a 200 KB
// data-URI image became a 200,033-character passage, a 4 MB base64 file
// a 4 MB one).
func TestBlobsAreNotText(t *testing.T) {
	para := "A heat pipe moves heat by evaporating a fluid at the hot end and condensing it at the cold end."
	big := "![the pipe](data:image/png;base64," + randomBase64(200_000) + ")"
	small := `<img alt="icon" src="data:image/svg+xml;base64,` + randomBase64(3000) + `">`
	wrapped := ""
	for range 400 {
		wrapped += randomBase64(76) + "\n"
	}
	for _, tc := range []struct {
		name, text string
		limit      int
		reason     string // of the passage that is left out
	}{
		{"a 200 KB data-URI image", para + "\n\n" + big + "\n\n" + para, 6000, "a data-URI image (image/png, 200,035 characters): not text"},
		{"a small data URI inside a paragraph", para + " " + small + " " + para, 6000, "a data-URI image (image/svg+xml, 3,049 characters): not text"},
		{"a 1 MB base64 line", randomBase64(1 << 20), 6000, "base64 data (1,048,576 characters): not text"},
		{"wrapped base64", para + "\n\n" + wrapped + "\n" + para, 1000, "base64 data"},
		{"a wrapped base64 file whose data has runs of zero bytes", wrappedWithZeros(), 6000, "base64 data"},
		{"one word over the limit", para + "\n\n" + strings.Repeat("abc", 3000) + "\n\n" + para, 6000, "one word of 9,000 characters, longer than grounded.passage_chars 6000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units := docUnits(t, "doc.md", tc.text, tc.limit)
			left, kept := 0, 0
			for _, u := range units {
				if u.LeaveOut != "" {
					left++
					if !strings.HasPrefix(u.LeaveOut, tc.reason) {
						t.Errorf("passage %d left out as %q, want %q", u.PassageIndex, u.LeaveOut, tc.reason)
					}
					continue
				}
				kept++
				if n := utf8.RuneCountInString(u.Text); n > tc.limit {
					t.Errorf("passage %d of %d characters is sent (limit %d)", u.PassageIndex, n, tc.limit)
				}
				if strings.Contains(u.Text, "base64,") || strings.Contains(u.Text, randomBase64(76)) {
					t.Errorf("passage %d sends the blob with its text: %.200q", u.PassageIndex, u.Text)
				}
			}
			if left == 0 {
				t.Errorf("no passage is left out of %d", len(units))
			}
			if !strings.Contains(tc.text, para) && kept > 0 {
				t.Errorf("%d passages of a text that is all data are sent", kept)
			}
			if strings.Contains(tc.text, para) && kept == 0 {
				t.Error("the text around the blob is left out too")
			}
			if head := units[0].Doc.Head; strings.Contains(head, randomBase64(76)) {
				t.Errorf("the analysis reads the blob: %.300q", head)
			}
		})
	}
}
