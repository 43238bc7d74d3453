package source

import "testing"

// TestShortDataURIsAreText: a data URI whose data is elided or a few
// characters long (a documentation example, as the Requests docs show a
// multipart response: 'data:image/png;base64,iVBORw ....') is text like
// the rest of its passage, not a blob left out on its own; neither is a hex
// digest or a short key quoted in prose (found on a real documentation
// set: the example's lines became a passage left out as "a data-URI image
// (image/png, 29 characters)").
func TestShortDataURIsAreText(t *testing.T) {
	t.Parallel()
	para := "To send several files in one request, pass a list of tuples to files; the server echoes each part back."
	for _, tc := range []struct{ name, text string }{
		{"an elided data URI in a code example", para + "\n\n::\n\n    >>> r.text\n    {\n      'files': {'images': 'data:image/png;base64,iVBORw ....'}\n    }\n\n" + para},
		{"a short data URI in prose", para + " The placeholder is data:text/plain;base64,SGVsbG8= and nothing more. " + para},
		{"a digest and a key in prose", para + " Its SHA-256 is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 and the key AKIAIOSFODNN7EXAMPLE. " + para},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			units := docUnits(t, "doc.rst", tc.text, 6000)
			for _, u := range units {
				if u.LeaveOut != "" {
					t.Errorf("passage %d left out as %q: %.200q", u.PassageIndex, u.LeaveOut, u.Text)
				}
			}
			if len(units) != 1 {
				t.Errorf("%d passages, want the one the text fits in", len(units))
			}
		})
	}
}
