package golden

import "testing"

func TestFirstDiff(t *testing.T) {
	tests := []struct{ got, want, say string }{
		{"a\nb\nc\n", "a\nx\nc\n", "line 2:\n got: b\nwant: x"},
		{"a\n", "a\nb\n", "line 2:\n got: \nwant: b"},
		{"a\nb", "a\nb\n", "line 3:\n got: <end of file>\nwant: "},
		{"== x\n1\n2\n== y\n3\n", "== x\n1\n9\n== y\n4\n", "== x, line 3:\n got: 2\nwant: 9\n== y, line 5:\n got: 3\nwant: 4"},
	}
	for _, tt := range tests {
		if got := FirstDiff([]byte(tt.got), []byte(tt.want)); got != tt.say {
			t.Errorf("FirstDiff(%q, %q) = %q, want %q", tt.got, tt.want, got, tt.say)
		}
	}
}
