// Package verify judges an audit log: Stream checks one file or stream,
// Set the files of one log as one chain. A log is Valid when every line
// is a canonical record (decoded and re-encoded to the same bytes, package
// record), seqs run on without gaps, every prev is the hash of the line
// before, every signature verifies against the session's key (or
// Options' pinned key), and no record lies after the last signature
// of its session; Incomplete when the only fault is a cut or torn tail,
// which a crash leaves; Invalid otherwise. Problems are reported by line
// and seq. Verify reads a log once, in chunks decoded in parallel, and
// holds no more of it than the chunks in flight.
//
// # Torn writes
//
// A line that holds a NUL, or that ends a file without its '\n', is the
// start of torn bytes: answered by a recovery record (torn_bytes,
// torn_digest) within 2 MiB, or at the end of the log, with no signature
// in its lines, a torn write (Incomplete, as a cut tail is); otherwise
// Invalid.
//
// # Long lines
//
// A line longer than MaxLine is therefore none the journal wrote. Verify
// reports it (invalid) without holding it, hashing it as it streams by,
// and reads on: the next line's prev is checked against that hash, and
// every later line and session is checked as usual.
//
// # Sets
//
// verify takes a set of these files in any order, orders them by the
// ranges their names state, and reports by seq range a range in no file (a
// missing segment), in two (a duplicated one), or a segment that does not
// hold the range its name states (a cut segment, or an older copy of it).
package verify
