package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// FailuresName is the failures log inside a run directory.
const FailuresName = "failures.jsonl"

// Failure is one line of failures.jsonl: a problem that did not make it into
// the corpus at some stage.
type Failure struct {
	ID       string    `json:"id"`
	Stage    string    `json:"stage"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	Time     time.Time `json:"time"`
	Source   string    `json:"source,omitempty"`
	// Transient is set when the endpoint, not the problem, was at fault
	// (retries ran out on 429s, 5xx, timeouts or resets); a plain resume
	// tries such a problem again.
	Transient bool `json:"transient,omitempty"`
}

// failureLog is the parsed content of a failures log.
type failureLog struct {
	entries []Failure
	// good is the length of the prefix made of complete lines; a torn last
	// line (no newline and not valid JSON) starts there.
	good int64
	// torn is set when bytes after good were dropped; unterminated is set
	// when the last line was complete JSON but lacked its newline.
	torn, unterminated bool
}

// parseFailureLog reads a failures log. Only the last line may be damaged
// (a crash mid-append); any other bad line is an error naming name and the
// line number.
func parseFailureLog(name string, r io.Reader) (failureLog, error) {
	var out failureLog
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return failureLog{}, fmt.Errorf("reading %s: %w", name, err)
		}
		last := errors.Is(err, io.EOF)
		if last && len(line) == 0 {
			return out, nil
		}
		off += int64(len(line))
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			out.good = off
			if last {
				return out, nil
			}
			continue
		}
		f, perr := parseFailureLine(body)
		if perr != nil {
			if last {
				out.torn = true
				return out, nil
			}
			return failureLog{}, fmt.Errorf("%s line %d: %w", name, lineNo, perr)
		}
		out.entries = append(out.entries, f)
		out.good = off
		if last {
			out.unterminated = true
			return out, nil
		}
	}
}

func parseFailureLine(b []byte) (Failure, error) {
	var f Failure
	if err := json.Unmarshal(b, &f); err != nil {
		return Failure{}, fmt.Errorf("bad failure record: %w", err)
	}
	if f.ID == "" {
		return Failure{}, errors.New("bad failure record: empty id")
	}
	return f, nil
}
