// Package cache is the response cache: the store that keeps every answer a
// run paid for, so that asking again costs nothing and a killed run resumes
// without paying twice. It maps a request's [Identity] (a 64-bit key and a
// SHA-256 digest of the request's canonical encoding, both computed by
// llm.IdentityOf; this package never sees a request) to the raw response
// body and its [Usage].
//
// It is a storage engine with its own rules:
//
//   - An append-only log of checksummed entries (format.go), written by one
//     writer goroutine and made durable by group commit: [Cache.Put] returns
//     only once its entry is synced, and [Cache.Get] serves an entry only
//     once it is durable. A failed write or fsync is sticky ([ErrWrite]):
//     it is returned by that Put, every later one and Close.
//   - An index of where each identity's latest entry lies: a hash table in
//     a file beside the log (IndexPath), read with pread, so its size is in
//     the page cache, not in the heap; it is derived, and rebuilt from the
//     log when missing or stale.
//   - Recovery on open: a torn tail is cut, a damaged entry in the middle is
//     skipped and counted ([Stats]), a format-1 log is converted.
//   - Accounting: every response's usage is kept with it, so [Cache.Spent]
//     restores a resumed run's spend exactly, also after [Compact] drops
//     dead entries and after [Merge] joins the caches of a partitioned
//     job's workers.
//   - A base cache ([WithBase]) read beside it and never written, so variants
//     of a run share what the base paid for.
//
// All file access goes through internal/fsys, so its crash tests run on
// crashfs, a file system that loses what was not synced.
//
// Package llm's Client uses a Cache: a request it answers from the cache
// sends nothing and charges nothing, and Chat returns an answer only once it
// is durable here.
package cache
