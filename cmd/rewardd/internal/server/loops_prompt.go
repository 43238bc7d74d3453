package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/rubricforge/rubricforge/prompts"
)

// rubricatorPromptRequest is the body of POST /v1/rubricator_prompt: the
// problem (its question, or how to find it: problem_id, prompt, label) and
// a response, or several.
type rubricatorPromptRequest struct {
	ProblemID string          `json:"problem_id"`
	Question  string          `json:"question"`
	Prompt    json.RawMessage `json:"prompt"`
	Label     json.RawMessage `json:"label"`
	Response  *string         `json:"response"`
	Responses []string        `json:"responses"`
}

// rubricatorPrompt answers POST /v1/rubricator_prompt: RLCER's rubricator
// prompt for the problem and each response, as chat messages for the
// policy in its rubricator role ({"problem_id", "messages"} for one
// response, {"problem_id", "prompts"} for a list). The question comes from
// the request's question, else from the label or the corpus as for
// scoring.
func (s *Server) rubricatorPrompt(w http.ResponseWriter, body []byte) {
	var req rubricatorPromptRequest
	if err := decodeJSON(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case req.Response == nil && req.Responses == nil:
		writeError(w, http.StatusBadRequest, "response: required (or responses, a list), the reasoner's response the rubricator writes a rubric for")
		return
	case req.Response != nil && req.Responses != nil:
		writeError(w, http.StatusBadRequest, "response and responses: give one of them")
		return
	case len(req.Responses) > MaxResponses:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("responses: %d responses, at most %d", len(req.Responses), MaxResponses))
		return
	}
	question, id, msg, code := s.questionOf(&req)
	if msg != "" {
		writeError(w, code, msg)
		return
	}
	render := func(resp string) ([]prompts.Message, bool) {
		msgs, err := s.cfg.Prompts.RubricatorMessages(question, resp)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "rendering the rubricator prompt: "+err.Error())
			return nil, false
		}
		return msgs, true
	}
	if req.Response != nil {
		msgs, ok := render(*req.Response)
		if ok {
			s.answer(w, map[string]any{"problem_id": id, "messages": msgs})
		}
		return
	}
	out := make([][]prompts.Message, len(req.Responses))
	for i, resp := range req.Responses {
		msgs, ok := render(resp)
		if !ok {
			return
		}
		out[i] = msgs
	}
	s.answer(w, map[string]any{"problem_id": id, "prompts": out})
}

// questionOf finds the question of a rubricator prompt request; msg and
// code say why there is none.
func (s *Server) questionOf(req *rubricatorPromptRequest) (question, id, msg string, code int) {
	if strings.TrimSpace(req.Question) != "" && req.ProblemID == "" && len(req.Label) == 0 {
		return req.Question, "", "", 0
	}
	prompt, err := promptField(req.Prompt, "prompt")
	if err != nil {
		return "", "", err.Error(), http.StatusBadRequest
	}
	it := scoreItem{problemID: req.ProblemID, question: req.Question, prompt: prompt}
	it.setLabel(req.Label, "label")
	lab, why := s.resolve(&it)
	if lab == nil {
		if strings.TrimSpace(req.Question) != "" {
			return req.Question, req.ProblemID, "", 0
		}
		return "", "", "no question: " + why, http.StatusUnprocessableEntity
	}
	if lab.Grounded != nil {
		return "", "", "the rubricator's prompt is for math problems; " + lab.ID + " is a grounded question", http.StatusUnprocessableEntity
	}
	return lab.Question, lab.ID, "", 0
}
