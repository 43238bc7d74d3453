package testbin

// Build is Command for callers outside a Go test (the trainer shims'
// end-to-end test runs the commands through cmd/testbin): the path of the
// command in the module's package pkg, built from the sources as they are
// now, shared with the Go tests' builds of the same sources.
func Build(pkg string) (string, error) {
	return command(pkg)
}
