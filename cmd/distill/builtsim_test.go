package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
)

// A corpus a test only reads is setup, not what the test is about: it is
// made by the built distill (not race-instrumented) against the built
// simllm, configured as the in-process simulator the test keeps to ask
// what it planted (its answers are a pure function of the request and the
// configuration). That costs a fraction of the CPU of distill run
// in-process under the race detector, which main_test.go and the
// pipeline's own tests exercise.

// builtBins are the built distill and simllm.
type builtBins struct{ distill, simllm string }

// buildBins builds (or finds built) distill and simllm (testbin).
func buildBins(t *testing.T) builtBins {
	t.Helper()
	return builtBins{distill: buildDistill(t), simllm: testbin.Command(t, "examples/simllm")}
}

// simllmArgs are examples/simllm's flags for a simulator configured as
// cfg, reading its answers from the problems file: the rates, seed and
// planting. A field simllm is not given here is an error, so that the
// built simulator never answers otherwise than the configuration a test
// asks PlantedKind of.
func simllmArgs(cfg sim.Config, problems string) ([]string, error) {
	args := []string{"-problems", problems, "-seed", strconv.FormatUint(cfg.Seed, 10)}
	for _, r := range []struct {
		flag string
		v    float64
	}{{"-correct-rate", cfg.CorrectRate}, {"-length-rate", cfg.LengthRate}, {"-invalid-rate", cfg.InvalidRate}} {
		switch {
		case r.v < 0: // the simulator's "none"; simllm's is 0
			args = append(args, r.flag, "0")
		case r.v > 0:
			args = append(args, r.flag, formatRate(r.v))
		} // 0: the default, the same in both
	}
	if p := cfg.Plant; p != nil {
		args = append(args, "-plant", strings.Join([]string{
			"misaligned=" + formatRate(p.Misaligned), "saturated=" + formatRate(p.Saturated), "dead=" + formatRate(p.Dead),
			"noise=" + formatRate(p.Noise), "redundant=" + formatRate(p.Redundant), "judge-noise=" + formatRate(p.JudgeNoise),
			"paraphrase-noise=" + formatRate(p.ParaphraseNoise), "few-correct=" + formatRate(p.FewCorrect),
		}, ","))
	}
	rest := cfg
	rest.Answers, rest.Seed, rest.CorrectRate, rest.LengthRate, rest.InvalidRate, rest.Plant = nil, 0, 0, 0, 0, nil
	if !reflect.DeepEqual(rest, sim.Config{}) {
		return nil, fmt.Errorf("simllmArgs: the configuration sets fields it does not pass to simllm: %+v", rest)
	}
	return args, nil
}

// formatRate spells v so that simllm parses the same float64.
func formatRate(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// startSimllm starts the built simllm with args and returns its base URL
// and a stop that ends it (SIGTERM) and waits for it.
func startSimllm(bin string, args []string) (url string, stop func() error, err error) {
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() error {
		_ = cmd.Process.Signal(os.Interrupt) // gone already: Wait says so
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("simllm: %v\n%s", err, stderr.String())
			}
			return nil
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			return errors.Join(errors.New("simllm did not stop within a minute of SIGINT"), <-done)
		}
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("simllm printed no URL: %w", err), stop())
	}
	return strings.TrimSpace(line), stop, nil
}

// builtRun writes problems into dir/p.jsonl and runs the built distill run
// over them, with args added, into dir/run, against the built simllm
// configured as cfg (its Answers are the problems'); it returns the
// answers.
func builtRun(bins builtBins, dir string, problems int, cfg sim.Config, args ...string) (map[string]string, error) {
	input := filepath.Join(dir, "p.jsonl")
	answers, err := problemsFile(input, problems)
	if err != nil {
		return nil, err
	}
	simArgs, err := simllmArgs(cfg, input)
	if err != nil {
		return nil, err
	}
	url, stop, err := startSimllm(bins.simllm, simArgs)
	if err != nil {
		return nil, err
	}
	all := append([]string{"run", "--input", input, "--base-url", url, "--model", "simulated", "--out", filepath.Join(dir, "run"), "--quiet"}, args...)
	out, err := exec.Command(bins.distill, all...).CombinedOutput()
	if err != nil && !exitedWith(err, exitProblems) {
		return nil, errors.Join(fmt.Errorf("distill run: %v\n%s", err, out), stop())
	}
	return answers, stop()
}

// stderrOf is what a command that exec's Output ran wrote on stderr.
func stderrOf(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}
