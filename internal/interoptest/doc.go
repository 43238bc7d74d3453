// Package interoptest holds only tests: they check that corpus shards and
// `distill export` files read back unchanged through an independent parquet
// reader, apache/arrow-go, with the column types trainers need. It is a
// nested module so arrow-go's large dependency graph stays out of the main
// module's go.mod.
package interoptest
