package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/rubricforge/rubricforge/workers"
)

// parseDirsAndFlags parses flags that may come before, between or after
// the run directory arguments; at least one directory is required.
func parseDirsAndFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), stderr io.Writer, synopsis string) ([]string, bool, int) {
	var dirs []string
	for {
		if ok, code := parseFlags(fs, args, usage, stderr); !ok {
			return nil, false, code
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) == 0 {
		fmt.Fprintf(stderr, "%s: no run directory given\nUsage: %s (see -h)\n", fs.Name(), synopsis)
		return nil, false, exitUsage
	}
	return dirs, true, exitOK
}

// workersStatus prints the status of several run directories as one table.
func workersStatus(dirs []string, asJSON bool, stdout, stderr io.Writer) int {
	ws, err := workers.ReadWorkers(dirs)
	if err != nil {
		fmt.Fprintf(stderr, "distill status: %v\n", err)
		return exitFailed
	}
	if asJSON {
		if err := ws.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "distill status: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	ws.WriteText(stdout)
	return exitOK
}
