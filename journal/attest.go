package journal

import (
	"crypto/ed25519"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// Attestation: signatures off the call's path (doc.go, "Signatures").
//
// A record is durable when its group is synced, and attested when a
// signature covers it. The leader does not sign the groups it writes:
// after encoding a group it asks the attester, a goroutine of its own,
// to sign the group's last line (record.AppendAttestMessage), and the
// first record of a later group carries that signature (record.AppendAtt).
// So the signature is made while the group is written and synced (the
// sync waits on the disk, and the other core is free), and a call waits
// for its group's durability only, never for a signature.
//
// How far a signature may trail the records it covers:
//
//   - A group the leader syncs (every group at strict; at reply those a
//     response waits on; at interval the background syncer's) is signed
//     at once, and the next group carries the signature: its leader
//     waits for it, before encoding, if it is not made yet. It has had
//     the whole write and sync to be made, so the wait is rare and no
//     longer than what is left of one signature. A crash leaves at most
//     that one group unattested.
//   - A group no one syncs (every group at none and interval; intents at
//     reply), when no signature is asked for, has its last line signed;
//     the first group whose records are attestDelay or more younger than
//     the group asked for (by their ts) carries the signature, and the
//     next is asked for then. So at most one signature is made per
//     attestDelay. A record written while a signature is asked for waits
//     for the next one: it is attested by the first group written
//     attestDelay after the group that carries the signature asked for
//     before it (within 2 × attestDelay of its ts while records keep
//     coming; after a pause, attestDelay after the first group written).
//     A crash leaves unattested at most the records written within
//     attestDelay after the line whose signature was last carried, the
//     group that carried it, and the records written within attestDelay
//     after that group (FuzzAttest holds the writer to this). The
//     signature has had attestDelay to be made:
//     the leader waits for it then, which keeps what is written a
//     function of the records and their ts alone.
//   - Whatever the level, once the unattested lines hold
//     record.MaxUnattested bytes the leader signs the next record itself
//     (its "sig", as a session_end always is), so a tail is bounded in
//     bytes; the last group Close writes is signed the same way.

// attestDelay bounds how often lines of groups no one syncs are signed:
// at most once per attestDelay, which is the time bound of an unattested
// tail at none and interval. Its cost is one signature per attestDelay of
// writing, whatever the rate of calls.
const attestDelay = 10 * time.Millisecond

// attestLine is a line to attest: its seq and hash, and where it ends in
// the bytes the journal has written (its end, counting every line's
// '\n'), which tells the leader how many bytes the attestation covers.
type attestLine struct {
	seq  uint64
	hash record.Digest
	end  uint64
}

// attester signs the lines the leader asks for, in order, on its own
// goroutine. ask and wait are called by the leader only; close once,
// when no leader runs.
type attester struct {
	sign *signer
	// hook, if set, runs on the attester's goroutine before each
	// signature: tests hold signatures back with it.
	hook func(attestLine)

	mu   sync.Mutex
	cond sync.Cond
	// want is the newest line asked for and not yet begun (wanted); done
	// the last line signed, sig its signature (signed: one was made).
	want   attestLine
	wanted bool
	done   attestLine
	sig    [ed25519.SignatureSize]byte
	signed bool
	signs  uint64 // signatures made, for tests and benchmarks

	kick chan struct{}
	quit chan struct{}
	exit chan struct{}
}

func newAttester(s *signer, hook func(attestLine)) *attester {
	a := &attester{sign: s, hook: hook, kick: make(chan struct{}, 1), quit: make(chan struct{}), exit: make(chan struct{})}
	a.cond.L = &a.mu
	go a.run()
	return a
}

// ask asks for a signature of l, the newest line written, replacing any
// line asked for and not begun (l covers it).
func (a *attester) ask(l attestLine) {
	a.mu.Lock()
	a.want, a.wanted = l, true
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// wait returns the signature of the line with seq seq, the last asked
// for, once it is made.
func (a *attester) wait(seq uint64) [ed25519.SignatureSize]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	for !a.signed || a.done.seq != seq {
		a.cond.Wait()
	}
	return a.sig
}

// close stops the goroutine, after the signature it is making.
func (a *attester) close() {
	close(a.quit)
	<-a.exit
}

func (a *attester) run() {
	defer close(a.exit)
	var msg []byte
	for {
		select {
		case <-a.quit:
			return
		case <-a.kick:
		}
		a.mu.Lock()
		l, ok := a.want, a.wanted
		a.wanted = false
		a.mu.Unlock()
		if !ok {
			continue
		}
		if a.hook != nil {
			a.hook(l)
		}
		msg = record.AppendAttestMessage(msg[:0], l.seq, l.hash)
		mark(markSignStart)
		sig := a.sign.Sign(msg)
		mark(markSignEnd)
		a.mu.Lock()
		a.done, a.sig, a.signed = l, sig, true
		a.signs++
		a.cond.Broadcast()
		a.mu.Unlock()
	}
}
