package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the scripts in testdata/script: each is a session at
// a shell, commands and what they print, read top to bottom (the
// format: https://pkg.go.dev/github.com/rogpeppe/go-internal/testscript).
// aegis is the binary TestMain built from this tree, run as a child;
// $AEGIS is its path with symlinks resolved, $HOME is $WORK/home (where
// a script may put files), XDG_CONFIG_HOME is unset. Commands added to
// the standard set:
//
//	aegis ARGS…          run aegis; it must exit 0 (! aegis: not 0)
//	status N             the last aegis exited with status N
//	backups FILE N [TO]  FILE has N (0 or 1) backups, in the state folder's
//	                     config-backups at FILE's real path, mode 0600,
//	                     and none beside it; TO gets a copy
//	link FILE NEWNAME    give FILE a second name (a hard link)
//	mkfifo FILE…         make FIFOs, mode 0600
//	mode FILE PERM       FILE's permission bits are PERM (octal), or its
//	                     mode is PERM as ls writes it (prw-------)
//	truncate FILE SIZE   make FILE SIZE bytes long (sparse)
//	stamp FILE           set FILE's mtime an hour back
//	unchanged FILE       FILE's mtime is still the one stamp set
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                filepath.Join("testdata", "script"),
		RequireUniqueNames: true,
		UpdateScripts:      os.Getenv("AEGIS_UPDATE_SCRIPTS") != "",
		Setup:              scriptSetup,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"aegis": scriptAegis, "status": scriptStatus, "backups": scriptBackups,
			"link": scriptLink, "mkfifo": scriptMkfifo, "mode": scriptMode, "truncate": scriptTruncate,
			"stamp": scriptStamp, "unchanged": scriptUnchanged,
		},
	})
}

// scriptState is one script's record of its last aegis run and stamps.
type scriptState struct {
	status  int
	stamped map[string]time.Time
}

type stateKey struct{}

func scriptSetup(env *testscript.Env) error {
	self, err := filepath.EvalSymlinks(aegisBin)
	if err != nil {
		return err
	}
	home := filepath.Join(env.WorkDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil { // a script may put files there
		return err
	}
	env.Setenv("AEGIS", self)
	env.Setenv("HOME", home)
	env.Setenv("PATH", filepath.Dir(aegisBin)+string(os.PathListSeparator)+env.Getenv("PATH"))
	// The cache of every aegis the tests run is TestMain's.
	env.Setenv("XDG_CACHE_HOME", os.Getenv("XDG_CACHE_HOME"))
	env.Values[stateKey{}] = &scriptState{status: -1, stamped: map[string]time.Time{}}
	return nil
}

func state(ts *testscript.TestScript) *scriptState {
	return ts.Value(stateKey{}).(*scriptState)
}

// scriptAegis runs the aegis TestMain built, with the script's
// environment, folder and stdin; stdout and stderr are the script's to
// check.
func scriptAegis(ts *testscript.TestScript, neg bool, args []string) {
	err := ts.Exec(aegisBin, args...)
	st := state(ts)
	var ee *exec.ExitError
	switch {
	case err == nil:
		st.status = 0
	case errors.As(err, &ee):
		st.status = ee.ExitCode()
	default:
		ts.Fatalf("aegis: %v", err)
	}
	if neg != (st.status != 0) {
		ts.Fatalf("aegis exited with status %d; want %s", st.status, map[bool]string{true: "not 0", false: "0"}[neg])
	}
}

func scriptStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	if got := state(ts).status; got != want {
		ts.Fatalf("aegis exited with status %d; want %d", got, want)
	}
}

func scriptBackups(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: backups FILE N [TO]")
	}
	file := ts.MkAbs(args[0])
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	beside, err := filepath.Glob(file + ".aegis-backup-*")
	ts.Check(err)
	if len(beside) != 0 {
		ts.Fatalf("backups beside %s: %q; want none there", args[0], beside)
	}
	real, err := filepath.EvalSymlinks(file)
	ts.Check(err)
	backup := filepath.Join(ts.Getenv("HOME"), ".local", "state", "aegis", "config-backups", real)
	fi, err := os.Lstat(backup)
	switch {
	case want == 0 && !errors.Is(err, os.ErrNotExist):
		ts.Fatalf("%s has a backup, %s (%v); want none", args[0], backup, err)
	case want == 1 && err != nil:
		ts.Fatalf("%s has no backup: %v", args[0], err)
	case want == 1 && (!fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600):
		ts.Fatalf("backup %s has mode %v; want a file, mode 0600", backup, fi.Mode())
	case want > 1:
		ts.Fatalf("backups FILE N: a file has at most one backup")
	}
	if len(args) == 3 {
		if want == 0 {
			ts.Fatalf("no backup of %s to copy", args[0])
		}
		data, err := os.ReadFile(backup)
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), data, 0o600))
	}
}

func fileMode(ts *testscript.TestScript, path string) os.FileMode {
	fi, err := os.Stat(path)
	ts.Check(err)
	return fi.Mode().Perm()
}

func scriptStamp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stamp FILE")
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), at, at))
	state(ts).stamped[args[0]] = at
}

func scriptUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unchanged FILE")
	}
	at, ok := state(ts).stamped[args[0]]
	if !ok {
		ts.Fatalf("unchanged %s: not stamped", args[0])
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if !fi.ModTime().Equal(at) {
		ts.Fatalf("%s was modified at %v; want %v, as stamped", args[0], fi.ModTime(), at)
	}
}

func scriptMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mode FILE PERM")
	}
	if want, err := strconv.ParseUint(args[1], 8, 32); err == nil {
		if got := fileMode(ts, ts.MkAbs(args[0])); got != os.FileMode(want) {
			ts.Fatalf("%s has mode %#o; want %#o", args[0], got, want)
		}
		return
	}
	fi, err := os.Lstat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode().String(); got != args[1] {
		ts.Fatalf("%s has mode %s; want %s", args[0], got, args[1])
	}
}

func scriptLink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: link FILE NEWNAME")
	}
	ts.Check(os.Link(ts.MkAbs(args[0]), ts.MkAbs(args[1])))
}

func scriptTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: truncate FILE SIZE")
	}
	size, err := strconv.ParseInt(args[1], 0, 64)
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_CREATE|os.O_WRONLY, 0o600)
	ts.Check(err)
	defer f.Close()
	ts.Check(f.Truncate(size))
}

func scriptMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: mkfifo FILE…")
	}
	for _, a := range args {
		ts.Check(syscall.Mkfifo(ts.MkAbs(a), 0o600))
	}
}
