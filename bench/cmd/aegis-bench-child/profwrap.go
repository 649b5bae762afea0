package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// profWrap is aegis wrap's wiring, as in cmd/aegis/wrap.go without policy,
// confinement or rotation, run under the CPU profiler from the first
// relayed byte to the session's end.
func profWrap(audit, keyPath, durability, profile string, size int) int {
	dur, err := journal.ParseDurability(durability)
	if err != nil {
		return fail(err)
	}
	key, prof, err := keyAndProfile(keyPath, profile)
	if err != nil {
		return fail(err)
	}
	defer prof.Close()
	argv, err := echoArgv(size)
	if err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	j, err := journal.Open(audit, journal.Options{Durability: dur, Key: key})
	if err != nil {
		return fail(err)
	}
	seq, err := j.Append(&record.SessionStart{Aegis: "aegis-bench-child profwrap", Argv: argv, Durability: dur.String(), PolicySet: record.PassThroughSet})
	if err == nil {
		err = j.Wait(seq, journal.BeforeRequest)
	}
	if err != nil {
		return fail(err)
	}
	if err := pprof.StartCPUProfile(prof); err != nil {
		return fail(err)
	}
	r := relay.New(relay.Config{Journal: j, Client: os.Stdout})
	s := &supervise.Session{
		Relay: r, Journal: j, Argv: argv,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Signals: sigs,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "aegis-bench-child profwrap: "+format+"\n", args...)
		},
	}
	res := s.Run()
	pprof.StopCPUProfile()
	if err := errors.Join(res.Err, j.Close()); err != nil {
		return fail(err)
	}
	return res.Exit
}
