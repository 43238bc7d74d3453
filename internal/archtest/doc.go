// Package archtest holds the test that keeps the module's imports pointing
// the way docs/architecture.md says: it reads the table of packages and
// what each may import from that page, reads every package's real imports
// from its source, and fails on a package missing from the table, a row
// naming no package, an import the table does not allow, or a pure package
// that reaches for the network or the clock. It has no code of its own.
package archtest
