package main

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// profVerify checks the log audit, pinned to the public half of the key
// in keyPath, runs times, as aegis verify does for one file, under the
// CPU profiler.
func profVerify(audit, keyPath, profile string, runs int) int {
	key, prof, err := keyAndProfile(keyPath, profile)
	if err != nil {
		return fail(err)
	}
	defer prof.Close()
	if err := pprof.StartCPUProfile(prof); err != nil {
		return fail(err)
	}
	defer pprof.StopCPUProfile()
	for range max(runs, 1) {
		f, err := os.Open(audit)
		if err != nil {
			return fail(err)
		}
		rep, err := verify.Stream(f, verify.Options{Key: key.Public().(ed25519.PublicKey)})
		f.Close()
		if err != nil {
			return fail(err)
		}
		if rep.Status != verify.Valid {
			return fail(fmt.Errorf("%s: %v", audit, rep.Status))
		}
	}
	return 0
}

// keyAndProfile reads the signing key at keyPath and creates the file the
// CPU profile goes to.
func keyAndProfile(keyPath, profile string) (ed25519.PrivateKey, *os.File, error) {
	pemBytes, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	key, err := record.ParsePrivateKey(pemBytes)
	if err != nil {
		return nil, nil, err
	}
	prof, err := os.Create(profile)
	return key, prof, err
}
