package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// Limits on what one request may ask for.
const (
	MaxItems     = 16384 // items of /v1/score, samples of /get_reward (OpenRLHF 0.9: 512 prompts x 16 samples in one request)
	MaxResponses = 1024  // responses of /v1/score_group
)

// badRequest is a malformed request; its message names the field.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func bad(format string, args ...any) error { return &badRequest{fmt.Sprintf(format, args...)} }

// scoreItem is one response to score, decoded from any of the protocols.
type scoreItem struct {
	requestID string
	problemID string
	question  string
	prompt    string // the problem as a prompt: a templated string, or the last user message
	query     string // OpenRLHF only: the templated prompt and response, to find the problem in when prompt is empty
	label     *schema.Label
	answer    string // the ground truth a plain label gives, for the rubric found by the other fields
	response  string
	// finish is the response's finish_reason as the policy's endpoint gave
	// it ("stop", "length", ...), "" when the request did not send one
	// (reward.AnalyzeFinished); finishes are those of a /v1/score_group's
	// responses, parallel to them, nil when not sent.
	finish   string
	finishes []string
	scheme   string // "" takes the request's, the server's or the label's default
	err      string // set when the item cannot be scored (no response in the query, ...)
	// unjudged is set when the response is not to be judged (it cannot be
	// told from the prompt): it is paid the floor with this error
	// (unjudgedResult).
	unjudged string
	// badLabel is set when the item's label does not parse: the rubric
	// then comes from the corpus by problem id (the item's, else the
	// label's own), or the item fails with badLabel's reason.
	badLabel *unusableLabel
	note     string // set when the rubric came from the corpus in place of the label
	// loops are a /v1/score_group's proposals, guide and off_policy; nil
	// when it sends none of them.
	loops *loopFields
}

// finishOf is the finish_reason of a group's response i, "" when not sent.
func (it *scoreItem) finishOf(i int) string {
	if it.finishes == nil {
		return ""
	}
	return it.finishes[i]
}

// unusableLabel is a label that did not parse: why, and the id and scheme
// it names when those can be read.
type unusableLabel struct {
	reason     string
	id, scheme string
}

// decodeJSON decodes one JSON value into v; a syntax or type error names the
// byte offset or the field.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return bad("the request body is empty; expected a JSON object")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return bad("the request body is not valid JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ) && typ.Field != "":
		return bad("%s: expected %s, got a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.As(err, &typ):
		return bad("the request body must be a JSON object, got a JSON %s", typ.Value)
	}
	return bad("the request body is not valid JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "struct", "map":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// labelField decodes a label: our reward spec as a JSON string (what
// `distill export` writes in its label column) or object, or else the
// ground truth as users' datasets have it (OpenRLHF's and slime's label_key
// pointed at the answer column): a string that is not a JSON object, or a
// number. null or "" is no label. A spec that does not parse is an error.
func labelField(raw json.RawMessage, field string) (lab *schema.Label, groundTruth string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		return nil, "", nil
	}
	data := []byte(raw)
	switch {
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", bad("%s: %v", field, err)
		}
		t := strings.TrimSpace(s)
		if !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
			if t == "" {
				return nil, "", nil
			}
			return nil, s, nil // an answer such as "5", "\\frac{1}{2}" or "{1, 2}"
		}
		data = []byte(t)
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		return nil, string(raw), nil
	case raw[0] != '{':
		return nil, "", bad("%s: expected the label as a JSON string (the reward spec or the answer), an object or a number", field)
	}
	l, err := schema.ParseLabel(data)
	if err != nil {
		return nil, "", bad("%s: %v", field, err)
	}
	return &l, "", nil
}

// promptField decodes a prompt given as a string (plain or chat-templated)
// or as a list of {role, content} messages; of a list it keeps the last user
// message, the one that holds the problem.
func promptField(raw json.RawMessage, field string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", bad("%s: %v", field, err)
		}
		return s, nil
	case '[':
		var msgs []struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return "", bad("%s: expected a list of {\"role\", \"content\"} messages with string values", field)
		}
		user := ""
		for i, m := range msgs {
			if m.Role == nil || m.Content == nil {
				return "", bad("%s[%d]: a message needs \"role\" and \"content\"", field, i)
			}
			if *m.Role == "user" {
				user = *m.Content
			}
		}
		return user, nil
	}
	return "", bad("%s: expected a string or a list of {\"role\", \"content\"} messages", field)
}

// setLabel decodes an item's label; a bad one is the item's, not the
// request's, so that one bad row fails at most its own sample.
func (it *scoreItem) setLabel(raw json.RawMessage, field string) {
	l, answer, err := labelField(raw, field)
	if err != nil {
		it.badLabel = looseLabel(raw, err)
		return
	}
	it.label, it.answer = l, answer
}

// looseLabel is a label that did not parse, with the id and the scheme it
// names when they are strings (a valid scheme), whatever the rest holds.
func looseLabel(raw json.RawMessage, err error) *unusableLabel {
	u := &unusableLabel{reason: err.Error()}
	data := []byte(bytes.TrimSpace(raw))
	var s string
	if len(data) > 0 && data[0] == '"' && json.Unmarshal(data, &s) == nil {
		data = []byte(s)
	}
	var named struct {
		ID     json.RawMessage `json:"id"`
		Scheme json.RawMessage `json:"scheme"`
	}
	if json.Unmarshal(data, &named) != nil {
		return u
	}
	_ = json.Unmarshal(named.ID, &u.id)
	if json.Unmarshal(named.Scheme, &u.scheme) != nil || !slices.Contains(schema.Schemes, u.scheme) {
		u.scheme = ""
	}
	return u
}

func checkScheme(scheme, field string) error {
	if scheme != "" && !slices.Contains(schema.Schemes, scheme) {
		return bad("%s: %q is not a scheme (%s)", field, scheme, strings.Join(schema.Schemes, ", "))
	}
	return nil
}

// scoreRequest is the body of POST /v1/score.
type scoreRequest struct {
	Items  []scoreItemJSON `json:"items"`
	Scheme string          `json:"scheme"`
}

type scoreItemJSON struct {
	RequestID string          `json:"request_id"`
	ProblemID string          `json:"problem_id"`
	Question  string          `json:"question"`
	Prompt    json.RawMessage `json:"prompt"`
	Label     json.RawMessage `json:"label"`
	Response  *string         `json:"response"`
	Scheme    string          `json:"scheme"`
	// FinishReason is read by finishField, so that a value that is not a
	// string is refused naming the item.
	FinishReason json.RawMessage `json:"finish_reason"`
}

// finishField decodes an optional finish_reason: a string as the policy's
// endpoint returned it ("stop", "length", "content_filter", ...); null or
// absent is none.
func finishField(raw json.RawMessage, field string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", bad("%s: expected a string, the finish_reason the policy's endpoint returned (\"stop\", \"length\", ...), or null", field)
	}
	return s, nil
}

// finishesField decodes an optional finish_reasons list, one finish_reason
// (or null) per response; absent or null is none.
func finishesField(raw json.RawMessage, responses int) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, bad("finish_reasons: expected a list of strings, one finish_reason per response")
	}
	if len(list) != responses {
		return nil, bad("finish_reasons: %d entries, responses has %d", len(list), responses)
	}
	out := make([]string, len(list))
	for i, r := range list {
		f, err := finishField(r, fmt.Sprintf("finish_reasons[%d]", i))
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// decodeScore decodes a /v1/score body.
func decodeScore(body []byte) ([]scoreItem, error) {
	var req scoreRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if err := checkScheme(req.Scheme, "scheme"); err != nil {
		return nil, err
	}
	switch {
	case req.Items == nil:
		return nil, bad("items: required, a list of {\"response\", ...} objects")
	case len(req.Items) > MaxItems:
		return nil, bad("items: %d items, at most %d per request", len(req.Items), MaxItems)
	}
	out := make([]scoreItem, len(req.Items))
	for i, it := range req.Items {
		f := fmt.Sprintf("items[%d]", i)
		if it.Response == nil {
			return nil, bad("%s.response: required", f)
		}
		if err := checkScheme(it.Scheme, f+".scheme"); err != nil {
			return nil, err
		}
		prompt, err := promptField(it.Prompt, f+".prompt")
		if err != nil {
			return nil, err
		}
		finish, err := finishField(it.FinishReason, f+".finish_reason")
		if err != nil {
			return nil, err
		}
		scheme := it.Scheme
		if scheme == "" {
			scheme = req.Scheme
		}
		out[i] = scoreItem{requestID: it.RequestID, problemID: it.ProblemID, question: it.Question, prompt: prompt,
			response: *it.Response, finish: finish, scheme: scheme}
		out[i].setLabel(it.Label, f+".label")
	}
	return out, nil
}

// groupRequest is the body of POST /v1/score_group.
type groupRequest struct {
	RequestID string          `json:"request_id"`
	ProblemID string          `json:"problem_id"`
	Question  string          `json:"question"`
	Prompt    json.RawMessage `json:"prompt"`
	Label     json.RawMessage `json:"label"`
	Responses []string        `json:"responses"`
	Scheme    string          `json:"scheme"`
	// FinishReasons are the responses' finish_reasons, parallel to them.
	FinishReasons json.RawMessage `json:"finish_reasons"`
	// The training-time loops' fields (loops_decode.go).
	Proposals     json.RawMessage `json:"proposals"`
	ProposalsMode json.RawMessage `json:"proposals_mode"`
	Guide         json.RawMessage `json:"guide"`
	OffPolicy     json.RawMessage `json:"off_policy"`
}

// decodeGroup decodes a /v1/score_group body into the problem (as an item
// without a response) and the responses, which may be views of sc.
func decodeGroup(body []byte, sc *groupScratch) (scoreItem, []string, error) {
	var req groupRequest
	if !fastGroup(body, &req, sc) {
		req = groupRequest{}
		if err := decodeJSON(body, &req); err != nil {
			return scoreItem{}, nil, err
		}
	}
	switch {
	case req.Responses == nil:
		return scoreItem{}, nil, bad("responses: required, the list of every rollout of the prompt")
	case len(req.Responses) == 0:
		return scoreItem{}, nil, bad("responses: empty")
	case len(req.Responses) > MaxResponses:
		return scoreItem{}, nil, bad("responses: %d responses, at most %d per group", len(req.Responses), MaxResponses)
	}
	if err := checkScheme(req.Scheme, "scheme"); err != nil {
		return scoreItem{}, nil, err
	}
	prompt, err := promptField(req.Prompt, "prompt")
	if err != nil {
		return scoreItem{}, nil, err
	}
	finishes, err := finishesField(req.FinishReasons, len(req.Responses))
	if err != nil {
		return scoreItem{}, nil, err
	}
	loops, err := decodeLoops(&req)
	if err != nil {
		return scoreItem{}, nil, err
	}
	it := scoreItem{requestID: req.RequestID, problemID: req.ProblemID, question: req.Question, prompt: prompt, scheme: req.Scheme, finishes: finishes, loops: loops}
	it.setLabel(req.Label, "label") // a bad label is a 400 unless the corpus has the problem (Server.resolve)
	return it, req.Responses, nil
}

// getRewardRequest is the body OpenRLHF's remote reward client posts.
type getRewardRequest struct {
	Query   []string          `json:"query"`
	Prompts []string          `json:"prompts"`
	Labels  []json.RawMessage `json:"labels"`
}

// decodeGetReward decodes an OpenRLHF /get_reward body: N >= 1 queries, with
// prompts and labels of the same length when present.
func decodeGetReward(body []byte, scheme string) ([]scoreItem, error) {
	var req getRewardRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	n := len(req.Query)
	switch {
	case req.Query == nil:
		return nil, bad("query: required, a list of prompt+response strings")
	case n > MaxItems:
		return nil, bad("query: %d samples, at most %d per request", n, MaxItems)
	case req.Prompts != nil && len(req.Prompts) != n:
		return nil, bad("prompts: %d entries, query has %d", len(req.Prompts), n)
	case req.Labels != nil && len(req.Labels) != n:
		return nil, bad("labels: %d entries, query has %d", len(req.Labels), n)
	}
	out := make([]scoreItem, n)
	for i, q := range req.Query {
		it := scoreItem{query: q, scheme: scheme}
		if req.Prompts != nil {
			it.prompt = req.Prompts[i]
		}
		if req.Labels != nil {
			it.setLabel(req.Labels[i], fmt.Sprintf("labels[%d]", i))
		}
		resp, err := ResponseFromQuery(q, it.prompt)
		switch {
		case errors.Is(err, ErrAmbiguousResponse):
			it.unjudged = fmt.Sprintf("query[%d]: %v", i, err)
		case err != nil && it.err == "":
			it.err = fmt.Sprintf("query[%d]: %v", i, err)
		}
		it.response = resp
		out[i] = it
	}
	return out, nil
}

// slimeRequest is the body slime's remote_rm posts.
type slimeRequest struct {
	Prompt   json.RawMessage `json:"prompt"`
	Response *string         `json:"response"`
	Label    json.RawMessage `json:"label"`
}

// decodeSlime decodes a slime /score body.
func decodeSlime(body []byte, scheme string) (scoreItem, error) {
	var req slimeRequest
	if err := decodeJSON(body, &req); err != nil {
		return scoreItem{}, err
	}
	if req.Response == nil {
		return scoreItem{}, bad("response: required")
	}
	prompt, err := promptField(req.Prompt, "prompt")
	if err != nil {
		return scoreItem{}, err
	}
	it := scoreItem{prompt: prompt, response: TrimEndTokens(*req.Response), scheme: scheme}
	it.setLabel(req.Label, "label")
	return it, nil
}
