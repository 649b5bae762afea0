// Package atomicfile replaces a file atomically and durably: the new
// bytes go to a temporary file in the same folder, which is synced,
// renamed over the file and followed by a sync of the folder. A reader
// of the file sees the old bytes or the new ones, never a torn or empty
// file, and once Replace returns nil the new bytes survive a crash.
//
// Every step is relative to a Dir: a folder held open by descriptor
// (OpenDir, or a caller's own folder walked without following links), or
// any implementation a caller supplies (the journal's fault-injecting
// file system). google/renameio is not used: it names files by path, so
// a folder swapped for a symbolic link between steps could redirect a
// write, and it leaves the folder unsynced, so a rename it reports done
// may be lost in a power failure.
//
// A failure is an *Error naming the step (Op) that failed; callers
// classify it with errors.As and its Op, and the cause with errors.Is.
// Before the rename nothing at the file's name has changed, and the
// temporary file is removed; after it, only the folder's sync failed.
package atomicfile
