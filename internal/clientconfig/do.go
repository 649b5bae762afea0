package clientconfig

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// ErrNoClient is Do's refusal of a file it would wrap whose client
// neither Options.Client nor the file's path (ClientOfFile) tells.
var ErrNoClient = errors.New("which client reads it? aegis cannot tell by its path")

// Do is Apply as aegis config runs it on each file. Without o.Client the
// client is told by the file's path (ClientOfFile). When DoWrap still has
// none, the file is read only: one it refuses says why, one with a stdio
// entry to wrap returns the listing with ErrNoClient, and one with nothing
// to wrap needs no client and is left as it is.
func Do(path string, act Action, o Options, dryRun bool, backups string) (*Applied, error) {
	if o.Client == "" {
		o.Client = ClientOfFile(path)
	}
	if act != DoWrap || o.Client != "" {
		return Apply(path, act, o, dryRun, backups)
	}
	a, err := Apply(path, List, o, dryRun, backups)
	if err == nil && slices.ContainsFunc(a.Result.Entries, func(e Entry) bool { return e.Kind == Stdio }) {
		err = ErrNoClient
	}
	return a, err
}

// ClientOfFile is ClientOf of path as named, or else as its symlinks
// resolve: a client's file may be a link into a dotfiles folder.
func ClientOfFile(path string) string {
	if c := ClientOf(path); c != "" {
		return c
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return ClientOf(real)
	}
	return ""
}

// Self returns the absolute path of the running executable, symlinks
// resolved: the Options.Aegis a client is to run when none is named.
func Self() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	return exe, err
}
