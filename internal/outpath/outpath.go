// Package outpath checks, before anything is written, the paths the
// commands (distill, validate) write their outputs to, so that an output
// never replaces an input, a file of a run directory or an export, or a file
// the user did not mean to replace. Every command's output flags go through
// it, so they refuse the same things with the same words.
package outpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rubricforge/rubricforge/corpus"
)

// ErrRefused is wrapped by every refusal; commands exit 2 on it.
var ErrRefused = errors.New("output path refused")

func refuse(flag, path, format string, args ...any) error {
	return fmt.Errorf("%s %s: %s: %w", flag, path, fmt.Sprintf(format, args...), ErrRefused)
}

// File checks path, given with flag (e.g. "--html"), as an output file. It
// refuses a directory, a path that is one of inputs (the same file, however
// named), a path inside a run directory or an export, and an existing file
// unless force. "" and "-" (standard output) pass.
func File(flag, path string, force bool, inputs ...string) error {
	if path == "" || path == "-" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return refuse(flag, path, "is a directory; give the name of a file")
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err == nil {
		for _, in := range inputs {
			if ist, ierr := os.Stat(in); ierr == nil && os.SameFile(st, ist) {
				return refuse(flag, path, "is an input of this command; write the output to another file")
			}
		}
	}
	if what, dir := container(filepath.Dir(path)); what != "" {
		return refuse(flag, path, "is inside the %s %s, whose files only its own commands write; write the output elsewhere", what, dir)
	}
	if err == nil && !force {
		return refuse(flag, path, "exists; give a new name, or --force to replace it")
	}
	return nil
}

// Dir checks path, given with flag, as an output directory that a command
// fills (an export): it must not be a run directory or inside one, nor
// inside an export, nor an input.
func Dir(flag, path string, inputs ...string) error {
	if st, err := os.Stat(path); err == nil {
		if !st.IsDir() {
			return refuse(flag, path, "is a file, not a directory")
		}
		if isRun(path) {
			return refuse(flag, path, "is a run directory; write the output to another directory")
		}
		for _, in := range inputs {
			if ist, ierr := os.Stat(in); ierr == nil && os.SameFile(st, ist) {
				return refuse(flag, path, "is an input of this command; write the output to another directory")
			}
		}
	}
	if what, dir := container(filepath.Dir(path)); what != "" {
		return refuse(flag, path, "is inside the %s %s; write the output elsewhere", what, dir)
	}
	return nil
}

// container returns the nearest run directory or export that holds dir
// (dir itself included), and which it is; "" when there is none.
func container(dir string) (what, at string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", ""
	}
	for {
		switch {
		case isRun(abs):
			return "run directory", abs
		case exists(filepath.Join(abs, corpus.ExportManifestName)):
			return "export", abs
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return "", ""
		}
		abs = parent
	}
}

// isRun reports whether dir is a run directory: a manifest and a shards
// directory, or a run lock.
func isRun(dir string) bool {
	l := corpus.Layout{Dir: dir}
	st, err := os.Stat(l.Shards())
	return (err == nil && st.IsDir() && exists(l.Manifest())) || exists(l.Lock())
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
