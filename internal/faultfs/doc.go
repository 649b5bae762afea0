// Package faultfs decides which operations of a file layer fail, for the
// tests of its error paths, in the manner of pebble's vfs/errorfs. A file
// layer (the journal's OSFS) asks an Injector before each operation it is
// about to do, naming it by kind ("write", "sync", "rename", …: the layer's
// own vocabulary) and path; the Injector counts it and returns the Fault of
// the first Rule whose Predicate matches, if any.
//
// Predicates compose: Kind and Path (a glob, or an exact path) match one
// operation; And, Or and Not combine them; Nth and FromNth count what they
// match, to fail the Nth write, or every sync from the third on. A Fault
// is an error (EIO, ENOSPC, EROFS, …) returned in place of the operation,
// or a short write: half the bytes written, then the error (or none, a
// short count the caller must notice on its own).
//
// faultfs imports nothing of the layers it drives, so that their own
// in-package tests can use it; the layer holds the hook (Injector.Hook),
// and nothing but tests sets it.
package faultfs
