// Package pincmd is aegis pin: pinning a server's tools ahead of time
// (running the server and listing its tools), listing the pins, showing
// what changed as a diff, and accepting a change (Main). The pins
// themselves, and what a wrap does with them, are package pin's; this
// package holds what starts a process or asks who the user is, which the
// recorder (package relay) does not import.
//
// Pinning ahead speaks either revision over the server's stdio (conn):
// it sends server/discover with the 2026-07-28 revision's _meta, and a
// DiscoverResult naming 2026-07-28 makes the session that revision's
// (every request carries the _meta, no initialize). Any other answer, an
// error, or none within ProbeTimeout falls back to initialize over
// 2025-11-25, as the revision's stdio binding asks of a client that
// speaks both; a server slow to answer is sent initialize after the
// timeout and the first answer decides, so a late DiscoverResult still
// wins. --protocol chooses the revision without asking.
package pincmd
