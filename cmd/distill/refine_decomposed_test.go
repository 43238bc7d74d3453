package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/schema"
)

// decomposition is a finished refine --decompose of a shared planted
// corpus (sharedPlanted), run in-process under the race detector against
// the built simllm configured as the one that made the corpus, through a
// proxy that keeps the requests for finer items (promptRecorder).
type decomposition struct {
	src, dst  string
	stdout    []byte   // refine --json's summary
	prompts   []string // the requests for finer items, each its messages' text
	simulator *sim.Server
}

// sharedSRaR is the decomposition of the shared planted srar corpus of 24
// problems, made once per test binary: several tests check different
// properties of the same online decomposition (what it keeps, what its
// requests show, and as the reference a killed or batched one must equal),
// so it is paid for once.
var sharedSRaR struct {
	once sync.Once
	d    decomposition
	err  error
}

// sharedDecomposition is sharedSRaR, made by the first test to ask.
func sharedDecomposition(t *testing.T) decomposition {
	t.Helper()
	src, answers := sharedPlanted(t, schema.StyleSRaR, 24)
	bins := buildBins(t)
	sharedSRaR.once.Do(func() {
		dir := filepath.Join(sharedRoot, "decomposed-srar-24")
		if sharedSRaR.err = os.Mkdir(dir, 0o755); sharedSRaR.err == nil {
			sharedSRaR.d, sharedSRaR.err = decompose(bins, src, answers, filepath.Join(dir, "dec"))
		}
	})
	if sharedSRaR.err != nil {
		t.Fatalf("shared decomposition: %v", sharedSRaR.err)
	}
	return sharedSRaR.d
}

// decomposeBuiltSim is a decomposition of the shared planted corpus of
// style and problems into a directory of the test's own, by the built
// distill (builtDecompose): for a test that checks what the decomposition
// keeps, not how refine --decompose runs (the shared one runs in-process
// under the race detector).
func decomposeBuiltSim(t *testing.T, style string, problems int) decomposition {
	t.Helper()
	src, answers := sharedPlanted(t, style, problems)
	d, err := builtDecompose(buildBins(t), src, answers, filepath.Join(t.TempDir(), "dec"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// withPlantedSimllm starts the built simllm configured as
// plantedConfig(answers) for the problems beside src, runs f against its
// URL and stops the simulator before it returns.
func withPlantedSimllm(bins builtBins, src string, answers map[string]string, f func(simURL string) error) (cfg sim.Config, err error) {
	cfg = plantedConfig(answers)
	args, err := simllmArgs(cfg, filepath.Join(filepath.Dir(src), "p.jsonl"))
	if err != nil {
		return cfg, err
	}
	simURL, stop, err := startSimllm(bins.simllm, args)
	if err != nil {
		return cfg, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	return cfg, f(simURL)
}

// builtDecompose runs refine --decompose --json of src into dst with the
// built distill against the built simllm configured as
// plantedConfig(answers); the simulator ends before it returns. It keeps
// no prompts.
func builtDecompose(bins builtBins, src string, answers map[string]string, dst string) (decomposition, error) {
	var out []byte
	cfg, err := withPlantedSimllm(bins, src, answers, func(simURL string) error {
		var err error
		out, err = exec.Command(bins.distill, decomposeArgs(src, dst, simURL)...).Output()
		if err != nil {
			return fmt.Errorf("refine --decompose: %v\n%s", err, stderrOf(err))
		}
		return nil
	})
	if err != nil {
		return decomposition{}, err
	}
	return decomposition{src: src, dst: dst, stdout: out, simulator: sim.New(cfg)}, nil
}

// decompose runs refine --decompose --json of src into dst in-process
// against the built simllm configured as plantedConfig(answers), through
// a recording proxy; both end before it returns.
func decompose(bins builtBins, src string, answers map[string]string, dst string) (decomposition, error) {
	var rec promptRecorder
	var stdout, stderr bytes.Buffer
	cfg, err := withPlantedSimllm(bins, src, answers, func(simURL string) error {
		proxied, closeProxy, err := rec.serve(simURL)
		if err != nil {
			return err
		}
		defer closeProxy()
		if code := run(decomposeArgs(src, dst, proxied), &stdout, &stderr); code != exitOK {
			return fmt.Errorf("refine --decompose: exit %d\n%s", code, stderr.String())
		}
		return nil
	})
	if err != nil {
		return decomposition{}, err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return decomposition{src: src, dst: dst, stdout: stdout.Bytes(), prompts: rec.prompts, simulator: sim.New(cfg)}, nil
}
