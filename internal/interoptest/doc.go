// Package interoptest holds only tests: they check that corpus shards read
// back unchanged through an independent parquet reader, apache/arrow-go. It
// is a nested module so arrow-go's large dependency graph stays out of the
// main module's go.mod.
package interoptest
