// Package benchkit is what the measurement commands under internal/bench
// share: their work directory, what a finished process used (CPU, peak
// RSS), and the machine's state beside a figure (load average, memory).
package benchkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// WorkDir makes the work directory: dir when given (made if missing), else
// a new temporary one named after tool. It returns its absolute path and
// how to clean up: nothing when dir was given or keep is set (then the
// kept directory is named on stderr), else removing it.
func WorkDir(tool, dir string, keep bool) (string, func(), error) {
	given := dir != ""
	if !given {
		d, err := os.MkdirTemp("", tool+"-")
		if err != nil {
			return "", nil, fmt.Errorf("making a work directory: %w", err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("making %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	switch {
	case given:
		return abs, func() {}, nil
	case keep:
		return abs, func() { fmt.Fprintf(os.Stderr, "%s: work directory kept: %s\n", tool, abs) }, nil
	}
	return abs, func() { _ = os.RemoveAll(abs) }, nil
}

// Used is what a finished process used: its CPU time (user and system)
// and its peak resident set in KiB (0 where the system does not say).
func Used(st *os.ProcessState) (cpu time.Duration, maxRSSKiB int64) {
	if st == nil {
		return 0, 0
	}
	cpu = st.UserTime() + st.SystemTime()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		maxRSSKiB = ru.Maxrss
	}
	return cpu, maxRSSKiB
}

// LoadAvg is the 1, 5 and 15 minute load averages, or "?".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// MemTotal is the machine's memory from /proc/meminfo, or "".
func MemTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			var kib int64
			if _, err := fmt.Sscan(f[1], &kib); err != nil {
				return ""
			}
			return fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
		}
	}
	return ""
}
