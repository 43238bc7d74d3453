// Command exportrows prints the rows of a `distill export` directory as JSON
// lines, in the order of export.json's files: for parquet formats each row
// as the dict HF datasets hands a trainer (verl's extra_info, the label
// string, ...), for jsonl the records as they are. It needs no Python or
// pyarrow, so the trainer shims' tests and a curious user can see exactly
// what a trainer reads.
//
// Usage: exportrows [-split train] EXPORT_DIR
//
// Exit codes: 0 ok, 1 failed, 2 usage error.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rubricforge/rubricforge/corpus"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exportrows", flag.ContinueOnError)
	fs.SetOutput(stderr)
	split := fs.String("split", "", "print only this split's rows; e.g. -split train")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: exportrows [-split train] EXPORT_DIR\n\nPrints the rows of a distill export as JSON lines.\n\nExample:\n  exportrows -split validation exports/demo-verl | head -1\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	w := bufio.NewWriter(stdout)
	if err := printRows(w, fs.Arg(0), *split); err != nil {
		_ = w.Flush() // the rows before the error, if they can still be written; err is the failure
		fmt.Fprintf(stderr, "exportrows: %v\n", err)
		return 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "exportrows: %v\n", err)
		return 1
	}
	return 0
}

func printRows(w *bufio.Writer, dir, split string) error {
	m, err := corpus.ReadExportManifest(dir)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, f := range m.Files {
		if split != "" && !strings.HasPrefix(f.File, "data/"+split+"-") {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(f.File))
		if err := printFile(w, enc, m.Format, path); err != nil {
			return err
		}
	}
	return nil
}

func printFile(w *bufio.Writer, enc *json.Encoder, format, path string) error {
	switch format {
	case corpus.FormatVerl:
		return corpus.Scan(path, func(r *corpus.VerlRow) error { return enc.Encode(r) })
	case corpus.FormatRaR:
		return corpus.Scan(path, func(r *corpus.RaRRow) error { return enc.Encode(r) })
	case corpus.FormatSRaRLines:
		return corpus.Scan(path, func(r *corpus.SRaRLinesRow) error { return enc.Encode(r) })
	case corpus.FormatJSONL:
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // only read: closing loses nothing
		_, err = io.Copy(w, f)
		return err
	}
	return fmt.Errorf("export format %q is not one this tool knows", format)
}
