package pipeline

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestUnauthorizedNamesTheKeyVariable: an endpoint that answers 401 fails
// the run with an error that names the variable the key is read from, and
// whether it was set (issue 43, item 10: a bare 401).
func TestUnauthorizedNamesTheKeyVariable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	rows := runtest.MakeProblems(2)
	input := filepath.Join(dir, "p.jsonl")
	runtest.WriteJSONL(t, input, rows)
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "no key was sent: RF_TEST_KEY (api_key_env) is not set"},
		{map[string]string{"RF_TEST_KEY": "sk-wrong"}, "the key in RF_TEST_KEY (api_key_env) was refused"},
	} {
		j := runtest.TestJob(input, filepath.Join(t.TempDir(), "run"), srv.URL+"/v1")
		j.Rollout.APIKeyEnv = "RF_TEST_KEY"
		_, err := Run(context.Background(), j, Options{Getenv: func(k string) string { return tc.env[k] }})
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sk-wrong") {
			t.Errorf("env %v: %v", tc.env, err)
		}
	}
}
