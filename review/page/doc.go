// Package page serves `validate review`: one local web page over a corpus
// where a person accepts, rejects and edits rubric items, one record at a
// time, keyboard first. The page is rendered on the server from embedded
// templates, with a little embedded JavaScript for the keys and no third
// party asset, so it works offline. Every decision is appended to the
// reviewer's log (package review) before the page is answered.
//
// # Security
//
// The server binds 127.0.0.1 unless told otherwise. Every POST must carry
// the page's key (a random value in the page, sent back in a header no
// other site's form can set) and a JSON body of at most MaxBody bytes; on
// a loopback address the Host header must name a loopback host, so that
// another site cannot reach the page through DNS rebinding. Bound to any
// other address, every request must also carry the access token the
// command prints (once in the URL, then as a cookie).
package page
