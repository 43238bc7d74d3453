package cache

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzCacheEntry: reading any bytes as a log entry never panics, and an
// entry that reads encodes back to the same record.
func FuzzCacheEntry(f *testing.F) {
	for _, r := range []record{
		{kind: kindResponse, key: 42, digest: testID("x").Digest, usage: Usage{Stage: "rollout", Model: "m", PromptTokens: 10, CompletionTokens: 300}, value: []byte(`{"choices":[]}`)},
		{kind: kindResponse, flags: flagCopied | flagLegacy, key: 1},
		{kind: kindTombstone, key: 7, digest: testID("y").Digest},
		{kind: kindSpend, responses: 3, usage: Usage{Stage: "judge", Model: "gpt", PromptTokens: 1 << 40}},
	} {
		e, err := appendEntry(nil, &r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(e)
	}
	f.Add([]byte{0xff, 0xc1, 0xc0, 0xf5, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		buf, r, err := readEntry(bytes.NewReader(b), nil, int64(len(b)))
		if err != nil {
			if !errors.Is(err, errBadEntry) {
				t.Fatalf("error %v is not a damaged entry", err)
			}
			return
		}
		again, err := appendEntry(nil, &r)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", r, err)
		}
		_, r2, err := readEntry(bytes.NewReader(again), nil, int64(len(again)))
		if err != nil || !bytes.Equal(r.value, r2.value) {
			t.Fatalf("round trip of %x: %+v -> %+v (%v)", buf, r, r2, err)
		}
		r.value, r2.value = nil, nil
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip of %x: %+v -> %+v", buf, r, r2)
		}
		decodeV1Entry(b)
	})
}
