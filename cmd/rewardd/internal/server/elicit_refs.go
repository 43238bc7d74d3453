package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rubricforge/rubricforge/corpus"
)

// maxReferenceBytes bounds a stored rollout kept for elicitation.
const maxReferenceBytes = 16 << 10

// referenceRow is the projection of a record that elicitation reads: its
// verified rollouts.
type referenceRow struct {
	ID       string `parquet:"id" json:"id"`
	Rollouts []struct {
		Text    string `parquet:"text" json:"text"`
		Correct bool   `parquet:"correct" json:"correct"`
	} `parquet:"rollouts,list" json:"rollouts"`
}

// LoadReferences reads, for elicitation, each problem's stored
// strong-model rollout from a corpus that keeps its rollouts (a run
// directory, one of its shards, a JSONL file of records): the shortest one
// verified correct, cut to 16 KiB. A distill export keeps none: the map is
// then empty, and elicitation compares the group's responses alone.
func LoadReferences(path string) (map[string]string, error) {
	out := map[string]string{}
	add := func(r *referenceRow) {
		for _, ro := range r.Rollouts {
			if !ro.Correct || ro.Text == "" {
				continue
			}
			if old, ok := out[r.ID]; !ok || len(ro.Text) < len(old) {
				out[r.ID] = cut(ro.Text, maxReferenceBytes)
			}
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	switch {
	case st.IsDir() && exists(filepath.Join(path, corpus.ManifestName)):
		files, err := corpus.Shards(path)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if err := scanReferences(f, add); err != nil {
				return nil, err
			}
		}
	case !st.IsDir() && strings.HasSuffix(path, ".jsonl"):
		return out, scanReferencesJSONL(path, add)
	case !st.IsDir():
		if ok, err := hasColumn(path, "rollouts", "list", "element", "text"); err == nil && ok {
			return out, scanReferences(path, add)
		}
	}
	return out, nil
}

func scanReferences(file string, add func(*referenceRow)) error {
	return corpus.Scan(file, func(r *referenceRow) error {
		add(r)
		return nil
	})
}

func scanReferencesJSONL(file string, add func(*referenceRow)) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), maxJSONLLine)
	for sc.Scan() {
		var r referenceRow
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			add(&r)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the stored rollouts of %s: %w", file, err)
	}
	return nil
}

// cut is s cut to at most n bytes on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
