package llm

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// batchInputLine is one request of a batch input file, in OpenAI's format
// (vLLM's run-batch reads the same).
type batchInputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// batchOutputLine is one line of a batch output or error file.
type batchOutputLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rowInfo is what the run knows of one row of a batch it wrote: the
// request's full identity, its stage, its choice count, and its prompt
// tokens and completion limit as DeferredRequest estimates them (which
// price the row against the budget). It is kept in the batch's rows file
// next to the input file, in the input file's order.
type rowInfo struct {
	id                   cache.Identity
	stage                string
	n                    int
	prompt, maxCompleted int64
}

// appendRow writes a rows-file line: key, digest, stage, n, prompt tokens,
// completion limit.
func appendRow(w io.Writer, r rowInfo) error {
	_, err := fmt.Fprintf(w, "%s %s %s %d %d %d\n", r.id.String(), hex.EncodeToString(r.id.Digest[:]), r.stage, r.n, r.prompt, r.maxCompleted)
	return err
}

// readRows reads a rows file into a map by custom id.
func readRows(fsy fsys.FS, path string) (map[string]rowInfo, error) {
	list, err := readRowList(fsy, path)
	if err != nil {
		return nil, err
	}
	rows := make(map[string]rowInfo, len(list))
	for _, r := range list {
		rows[r.id.String()] = r
	}
	return rows, nil
}

// readRowList reads a rows file in order. A line of an earlier version has
// no prompt tokens and completion limit (4 fields).
func readRowList(fsy fsys.FS, path string) ([]rowInfo, error) {
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var rows []rowInfo
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 && len(fields) != 6 {
			return nil, fmt.Errorf("%s line %d: want 4 or 6 fields", path, line)
		}
		key, err1 := strconv.ParseUint(fields[0], 16, 64)
		digest, err2 := hex.DecodeString(fields[1])
		n, err3 := strconv.Atoi(fields[3])
		var r rowInfo
		var err4, err5 error
		if len(fields) == 6 {
			r.prompt, err4 = strconv.ParseInt(fields[4], 10, 64)
			r.maxCompleted, err5 = strconv.ParseInt(fields[5], 10, 64)
		}
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil || len(digest) != 32 {
			return nil, fmt.Errorf("%s line %d: damaged row", path, line)
		}
		r.id.Key = key
		copy(r.id.Digest[:], digest)
		r.stage, r.n = fields[2], n
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// rowOutcome is what a batch said of one row.
type rowOutcome struct {
	body      json.RawMessage // the chat completion, when status is 200
	status    int             // HTTP status of the row; 0 when the row has none
	errCode   string          // batch_expired, batch_cancelled, ...
	errText   string
	malformed bool // the line itself did not decode
}

// eachOutputLine calls fn with every line of an output or error file,
// streaming it. A line that does not decode is reported with malformed
// set and an empty custom id, unless its custom id could be read.
func eachOutputLine(fsy fsys.FS, path string, fn func(customID string, o rowOutcome) error) error {
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		b, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(b))) > 0 {
			if ferr := fn(decodeOutputLine(b)); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func decodeOutputLine(b []byte) (string, rowOutcome) {
	var l batchOutputLine
	if err := json.Unmarshal(b, &l); err != nil {
		return "", rowOutcome{malformed: true, errText: err.Error()}
	}
	var o rowOutcome
	if l.Response != nil {
		o.status, o.body = l.Response.StatusCode, l.Response.Body
		if o.status != 200 {
			var env struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(l.Response.Body, &env) == nil {
				o.errText = env.Error.Message
			}
		}
	}
	if l.Error != nil {
		o.errCode, o.errText = l.Error.Code, l.Error.Message
	}
	return l.CustomID, o
}

// rowFailureLine is a row a batch did not answer, as the run keeps it in
// NAME.failures.jsonl: what a later run needs to know of it.
type rowFailureLine struct {
	CustomID string `json:"custom_id"`
	Status   int    `json:"status,omitempty"`
	Code     string `json:"code,omitempty"`
	Text     string `json:"text,omitempty"`
}

// writeFailures writes lines to path, durably.
func writeFailures(fsy fsys.FS, path string, lines []rowFailureLine) error {
	var b []byte
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			return err
		}
		b = append(append(b, j...), '\n')
	}
	return writeStream(fsy, path, bytes.NewReader(b))
}

// readFailures reads a failures file; a missing one has none.
func readFailures(fsy fsys.FS, path string) ([]rowFailureLine, error) {
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	var out []rowFailureLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var l rowFailureLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return out, fmt.Errorf("%s line %d: %v", path, line, err)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
