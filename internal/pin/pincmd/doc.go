// Package pincmd is aegis pin: pinning a server's tools ahead of time
// (running the server and listing its tools), listing the pins, showing
// what changed as a diff, and accepting a change (Main). The pins
// themselves, and what a wrap does with them, are package pin's; this
// package holds what starts a process or asks who the user is, which the
// recorder (package relay) does not import.
package pincmd
