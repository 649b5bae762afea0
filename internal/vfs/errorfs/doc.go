// Package errorfs wraps a vfs.FS to fail the operations tests choose, for
// the tests of the error paths of the log's writers and readers, in the
// manner of pebble's vfs/errorfs. Wrap returns an FS that asks an Injector
// before each operation it and its files do, named by a typed kind
// (OpWrite, OpSync, OpRenameExchange, OpRead, …) and path; the Injector
// counts it and returns the Fault of the first Rule whose Predicate
// matches, if any.
//
// Predicates compose: Kind and Path (a glob, or an exact path) match one
// operation; And, Or and Not combine them; Nth and FromNth count what they
// match, to fail the Nth write, or every sync from the third on. A Fault
// is an error (EIO, ENOSPC, EROFS, EMFILE, …) returned in place of the
// operation, or a torn write: the first half of the bytes written, then
// the error (or none, a short count the caller must notice on its own).
//
// An injected error reads as the operating system's would: around a
// *fs.PathError for an open or a read, bare for the rest, as package os
// and vfs.OS return them.
package errorfs
