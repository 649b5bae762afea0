// Package vfs is the file system the audit log's writers and readers go
// through: package journal writes and rotates a log through an FS, and
// package segment and package tlog's Index read through one. OS is the
// operating system's; tests wrap it (package errorfs) to fail any
// operation, on either side, and check what the caller does about it.
//
// An FS offers the operations the log needs and no more: opening a file to
// read (Open), opening or creating one to append to under an exclusive
// flock(2) (OpenLocked), creating a temporary file (Create), renaming with
// renameat2(2)'s modes (Rename), removing, stat, listing and fsyncing a
// directory. A File reads and writes at offsets, fdatasyncs (Sync), writes
// and syncs zeros ahead of its content (Zero: pre-zeroed space, package
// journal's prezero.go) and is truncated back to its content.
//
// Paths are used as given (relative to the working directory, as package
// os does). Errors are those of package os: *fs.PathError and
// *os.LinkError around the system's errno, so errors.Is(err,
// syscall.EIO) and errors.Is(err, fs.ErrNotExist) work whatever the FS.
package vfs
