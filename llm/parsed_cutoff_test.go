package llm

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestChatParsedEveryCutOffReason: a reply that parses but whose finish
// reason says the server cut it off (the token limit under any of its
// names, a content filter) is an unusable reply, repaired and in the end a
// *ParseError, whatever it holds: its parsable part may be a quote, not the
// answer. A reply that ended on its own parses.
func TestChatParsedEveryCutOffReason(t *testing.T) {
	for _, tc := range []struct {
		finish string
		cut    bool
	}{{"length", true}, {"max_tokens", true}, {"content_filter", true}, {"stop", false}, {"", false}, {"tool_calls", false}} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 200, completionBody(10, 5, Choice{Content: "ok, and then", FinishReason: tc.finish}))
		})
		c := newTestClient(t, srv.endpoint(), fastOptions(), nil, nil)
		err := c.ChatParsed(t.Context(), simpleRequest("q"), Ask{What: "verdicts", Repairs: 1, Parse: wantOK, Repair: repairTurn})
		var pe *ParseError
		switch {
		case tc.cut && (!errors.As(err, &pe) || pe.Attempts != 2 || !strings.Contains(err.Error(), "cut off")):
			t.Errorf("finish_reason %q: %v; want a *ParseError after 2 replies saying it was cut off", tc.finish, err)
		case !tc.cut && err != nil:
			t.Errorf("finish_reason %q: %v; want the reply", tc.finish, err)
		}
	}
}
