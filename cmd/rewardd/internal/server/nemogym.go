package server

// NeMo Gym's resource-server verify protocol (nemo_gym/base_resources_server.py
// in NVIDIA-NeMo/Gym: BaseVerifyRequest and BaseVerifyResponse): the request
// carries responses_create_params (the prompt, as the Responses API's
// input), the policy's response (a Responses API response object) and the
// dataset row's other fields; the answer is the request with reward added.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/rubricforge/rubricforge/reward"
)

const pathVerify = "/verify"

// verifyRequest is the part of a /verify body rewardd reads; the rest is
// echoed back as it came.
type verifyRequest struct {
	Params *struct {
		Input json.RawMessage `json:"input"`
	} `json:"responses_create_params"`
	Response *struct {
		Output []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"output"`
		// Status and IncompleteDetails say whether the policy's endpoint
		// cut the response off (responsesFinish); read leniently, as
		// rewardd read no such field before.
		Status            json.RawMessage `json:"status"`
		IncompleteDetails json.RawMessage `json:"incomplete_details"`
	} `json:"response"`
	ProblemID string          `json:"problem_id"`
	Question  string          `json:"question"`
	Label     json.RawMessage `json:"label"`
	Scheme    string          `json:"scheme"`
}

// decodeVerify decodes a /verify body into the item to score and the body's
// fields, echoed in the answer.
func decodeVerify(body []byte, scheme string) (scoreItem, map[string]json.RawMessage, error) {
	var req verifyRequest
	if err := decodeJSON(body, &req); err != nil {
		return scoreItem{}, nil, err
	}
	var fields map[string]json.RawMessage
	if err := decodeJSON(body, &fields); err != nil {
		return scoreItem{}, nil, err
	}
	switch {
	case req.Params == nil:
		return scoreItem{}, nil, bad("responses_create_params: required, the Responses API request the policy answered")
	case req.Response == nil:
		return scoreItem{}, nil, bad("response: required, the policy's Responses API response")
	}
	if err := checkScheme(req.Scheme, "scheme"); err != nil {
		return scoreItem{}, nil, err
	}
	if ic := bytes.TrimSpace(fields["instance_config"]); len(ic) > 0 && ic[0] != '{' && string(ic) != "null" {
		return scoreItem{}, nil, bad("instance_config: expected an object (NeMo-RL reads the reply's instance_config.mask_sample), got %s", ic)
	}
	prompt, err := responsesInput(req.Params.Input)
	if err != nil {
		return scoreItem{}, nil, err
	}
	var text []string
	for i, o := range req.Response.Output {
		if o.Type != "message" || o.Role != "assistant" {
			continue // reasoning items and tool calls are not the answer
		}
		t, err := contentText(o.Content, "output_text")
		if err != nil {
			return scoreItem{}, nil, bad("response.output[%d].content: %v", i, err)
		}
		text = append(text, t...)
	}
	// No assistant text at all (only reasoning, or tool calls) is an empty
	// response: paid the floor, as every protocol pays silence.
	it := scoreItem{problemID: req.ProblemID, question: req.Question, prompt: prompt, response: strings.Join(text, "\n"),
		finish: responsesFinish(req.Response.Status, req.Response.IncompleteDetails), scheme: cmp.Or(req.Scheme, scheme)}
	it.setLabel(req.Label, "label")
	return it, fields, nil
}

// responsesFinish is the finish_reason a Responses API response gives, as
// reward.AnalyzeFinished takes it: status "incomplete" is a response the
// endpoint cut off, "length" for incomplete_details.reason
// "max_output_tokens" (or none), "content_filter" for that reason. Any other
// status gives "" (unknown): a "completed" status is not taken as proof the
// model ended the text, since it is all that some servers report.
func responsesFinish(status, details json.RawMessage) string {
	var st string
	if json.Unmarshal(status, &st) != nil || st != "incomplete" {
		return ""
	}
	var d struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(details, &d) == nil && d.Reason == "content_filter" {
		return "content_filter"
	}
	return "length"
}

// responsesInput is the problem's text in a Responses API input: the input
// itself when a string, else the last user message's text.
func responsesInput(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", bad("responses_create_params.input: %v", err)
		}
		return s, nil
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return "", bad("responses_create_params.input: expected a string or a list of {\"role\", \"content\"} messages")
	}
	user := ""
	for i, m := range msgs {
		if m.Role != "user" {
			continue
		}
		t, err := contentText(m.Content, "input_text")
		if err != nil {
			return "", bad("responses_create_params.input[%d].content: %v", i, err)
		}
		user = strings.Join(t, "\n")
	}
	return user, nil
}

// contentText is the text of a message's content: a string, or the text of
// its parts of type kind (output_text, input_text).
func contentText(raw json.RawMessage, kind string) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, bad("expected a string or a list of {\"type\", \"text\"} parts")
	}
	var out []string
	for _, p := range parts {
		if p.Type == kind {
			out = append(out, p.Text)
		}
	}
	return out, nil
}

// nemoVerify answers NeMo Gym's POST /verify: the request's fields with
// reward (the /v1/score reward of the response), instance_config.mask_sample
// (where NeMo-RL reads it; also at the top level, as before) true when the
// judgment failed, and then failure_reason (the reward is then the failure
// floor, or --on-judge-failure's). A response that cannot be scored
// (no rubric found, a bad label) is a 422 naming why, never a reward of 0
// that looks judged. rubric_result is the /v1/score result.
func (s *Server) nemoVerify(ctx context.Context, w http.ResponseWriter, body []byte, scheme string) {
	item, fields, err := decodeVerify(body, scheme)
	res, ok := s.scoreSingle(ctx, w, item, err)
	if !ok {
		return
	}
	if res.Error != "" {
		writeError(w, http.StatusUnprocessableEntity, res.Error)
		return
	}
	out := make(map[string]any, len(fields)+4)
	for k, v := range fields {
		out[k] = v
	}
	out["reward"] = res.Reward
	masked := !res.JudgeOK && !res.Empty // an empty response is the policy's own: train on its floor
	out["instance_config"] = instanceConfig(fields["instance_config"], masked)
	out["mask_sample"] = masked
	if masked {
		out["failure_reason"] = res.JudgeError
	}
	out["rubric_result"] = res
	s.answer(w, out)
}

// instanceConfig is the reply's instance_config: the row's (raw, an
// object or absent; decodeVerify refuses another value) with mask_sample
// set. NeMo-RL drops a sample from the loss by it: its rollouts
// (nemo_rl/experience/rollouts.py, _extract_mask_sample_flags) read
// full_result["instance_config"]["mask_sample"], the full_result being the
// verify reply NeMo Gym's agent returns; a top-level mask_sample is not
// read there.
func instanceConfig(raw json.RawMessage, masked bool) map[string]any {
	out := map[string]any{}
	var row map[string]json.RawMessage
	if json.Unmarshal(raw, &row) == nil {
		for k, v := range row {
			out[k] = v
		}
	}
	out["mask_sample"] = masked
	return out
}

// failedMessage says why results are refused under --on-judge-failure
// error: the count of failed judgments and the first one's reason; false
// under another policy or when every judgment is in.
func (s *Server) failedMessage(results []reward.Result) (string, bool) {
	if s.cfg.OnJudgeFailure != reward.OnJudgeFailureError {
		return "", false
	}
	judged, failed := judgeFailures(results)
	if failed == 0 {
		return "", false
	}
	first := ""
	for _, r := range results {
		if r.Error == "" && !r.JudgeOK {
			first = r.JudgeError
			break
		}
	}
	return fmt.Sprintf("the judge failed on %d of %d responses (--on-judge-failure error; the verdicts in are cached, retry): %s", failed, judged, first), true
}
