package audit

import "github.com/rubricforge/rubricforge/corpus"

// Columns opens file i of in for reading chosen columns of its records
// directly (corpus.ColumnFile), for a reader of a few small columns of
// every record that cannot afford to decode rows; ok is false for a JSONL
// file or a verl export's file, which hold no record columns (read them
// with ScanFileAt).
func (in *Input) Columns(i int) (cf *corpus.ColumnFile, ok bool, err error) {
	f := in.Files[i]
	if f.JSONL || in.Format == FormatVerl {
		return nil, false, nil
	}
	if f.snap != nil {
		cf, err = corpus.SnapshotColumns(f.snap, f.index)
	} else {
		cf, err = corpus.OpenColumns(f.Path)
	}
	return cf, true, err
}
