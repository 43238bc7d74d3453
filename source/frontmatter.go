package source

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

// Front matter is the metadata block at the very start of a document, as
// static site generators (Jekyll, Hugo, Docusaurus, MkDocs) read it: YAML
// between a first line "---" and a line "---" or "...", or TOML between
// two lines "+++". It is metadata, never text: its title is the document's
// title. YAML holding a mapping, or nothing but comments, is front matter;
// YAML holding a scalar or a list ("---", a line of text, "---") is a
// thematic break around text, and stays text. TOML must parse.

// splitFrontMatter splits front matter off s: the text after it and its
// title field, if s starts with front matter.
func splitFrontMatter(s string) (body, title string, ok bool) {
	if rest, found := strings.CutPrefix(s, "---\n"); found {
		return splitAt(rest, func(l string) bool { return l == "---" || l == "..." }, yamlTitle)
	}
	if rest, found := strings.CutPrefix(s, "+++\n"); found {
		return splitAt(rest, func(l string) bool { return l == "+++" }, tomlTitle)
	}
	return "", "", false
}

// splitAt splits rest at its first line that closes the front matter;
// meta reads the front matter's title, or says it is none.
func splitAt(rest string, closes func(line string) bool, meta func(string) (string, bool)) (body, title string, ok bool) {
	for i := 0; i < len(rest); {
		line, next := lineAt(rest, i)
		if closes(strings.TrimRight(line, " \t")) {
			title, ok := meta(rest[:i])
			if !ok {
				return "", "", false
			}
			return rest[next:], title, true
		}
		i = next
	}
	return "", "", false
}

// yamlTitle reads YAML front matter: a mapping, or only comments.
func yamlTitle(src string) (string, bool) {
	var meta any
	if err := yaml.Unmarshal([]byte(src), &meta); err != nil {
		return "", false
	}
	switch m := meta.(type) {
	case nil:
		return "", true // empty, or comments only
	case map[string]any:
		return titleValue(m["title"]), true
	}
	return "", false
}

// tomlTitle reads TOML front matter.
func tomlTitle(src string) (string, bool) {
	var meta map[string]any
	if _, err := toml.Decode(src, &meta); err != nil {
		return "", false
	}
	return titleValue(meta["title"]), true
}

// titleValue is a title field's text: a string, or a scalar written as
// one; "" for anything else.
func titleValue(v any) string {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t)
	case int, int64, float64, bool:
		return fmt.Sprint(t)
	}
	return ""
}
