// Command testbin prints, one a line, the paths of the module's commands
// named by its arguments, built as the Go tests' end-to-end tests build
// them (package testbin): once per source state, shared with every test
// run of the same sources. Tests outside Go use it (the trainer shims'
// end-to-end test), through `go run`, which keeps the linked testbin in
// the build cache: a run whose commands are built costs about a second of
// CPU instead of linking each command again.
//
// Usage, from within the module: go run ./internal/testkit/testbin/cmd/testbin cmd/distill examples/simllm
//
// Exit codes: 0 ok, 1 a build failed, 2 usage error.
package main

import (
	"fmt"
	"os"

	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" {
		fmt.Fprintln(os.Stderr, "Usage: testbin PACKAGE...\n\nPrints the path of each package's command, built once per source state (e.g. testbin cmd/distill examples/simllm).")
		os.Exit(2)
	}
	for _, pkg := range os.Args[1:] {
		path, err := testbin.Build(pkg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
}
