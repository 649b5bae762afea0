package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/journal/record"
)

// Errors of package pin; classify with errors.Is.
var (
	// ErrFile: a pin file that cannot be read or written, or is not the
	// format. A refused file is never written over.
	ErrFile = errors.New("pin: pin file")
	// ErrAmbiguous: JSON that readers may read differently (Canonical).
	ErrAmbiguous = errors.New("pin: ambiguous JSON")
	// ErrUsage: a command line aegis pin cannot follow.
	ErrUsage = errors.New("pin: usage")
)

// Pins is one wrap's pins: the server's pin file, what its tools/list
// answers said, and which tools are changed (their definition, as last
// listed, differs from their pin, or readers disagree about it). It is
// shared by every session of the wrap and safe for concurrent use.
type Pins struct {
	path, server string
	logf         func(string, ...any)
	// Mode is the on_tool_change in force when no frame decider says
	// (policy.Gate's current policy; nil: policy.DefaultToolChange).
	mode func() string

	mu      sync.Mutex
	file    *File
	size    int                 // file's bytes as Marshal lays it out
	bodyIx  map[string][]string // bodies() of file; nil until asked
	changed map[string]string   // tool → the digest last listed ("" when ambiguous)
	gen     int                 // counts the pin files save made p's
	// over: the changed table was full when another name without a pin
	// was to enter it; from then on every name without a pin counts as
	// changed, and none is pinned on first use.
	over bool
}

// MaxChanged bounds the changed table's names without a pin (renames,
// ambiguous names, tools past a bound): a pinned tool's name always
// enters it, and the pin file bounds those. Past it, every tool without a
// pin counts as changed for the rest of the wrap (Changed).
const MaxChanged = 4096

// maxSaid bounds the lines one answer's changes are said in on stderr.
const maxSaid = 20

// Open reads the pin file at path for server (wrap's --name), whose
// changes are said with logf. A file Read refuses is an error: a wrap
// does not start on pins it cannot read.
func Open(path, server string, mode func() string, logf func(string, ...any)) (*Pins, error) {
	f, err := Read(path)
	if err != nil {
		return nil, err
	}
	if mode == nil {
		mode = func() string { return policy.DefaultToolChange }
	}
	p := &Pins{path: path, server: server, logf: logf, mode: mode, changed: map[string]string{}}
	p.setFile(f, 0)
	return p, nil
}

// setFile makes f the pins in force; size is its bytes as Marshal lays
// it out, 0 to measure. Called with mu held, or before p is shared.
func (p *Pins) setFile(f *File, size int) {
	if size == 0 {
		size = f.Size()
	}
	p.file, p.size, p.bodyIx = f, size, nil
}

// markChanged enters name in the changed table with the digest last
// listed ("" when ambiguous). A name without a pin enters only while the
// table holds fewer than MaxChanged names beyond the pinned ones; past
// that p is over (Changed). It reports whether name entered. Called with
// mu held.
func (p *Pins) markChanged(name, ds string) bool {
	_, had := p.changed[name]
	_, pinned := p.file.Tools[name]
	if !had && !pinned && len(p.changed) >= MaxChanged+len(p.file.Tools) {
		if !p.over {
			p.over = true
			p.logf("tool pins of %s: more than %d changed tools without a pin; from now on every tool without a pin counts as changed (refused under on_tool_change: block) and none is pinned on first use, until the wrap restarts", p.server, MaxChanged)
		}
		return false
	}
	p.changed[name] = ds
	return true
}

// Path is the pin file's path.
func (p *Pins) Path() string { return p.path }

// Changed reports whether tool is changed: listed with another definition
// than its pin, or read differently by some reader, and not accepted
// since; or, once the changed table has overflowed (MaxChanged), has no
// pin.
func (p *Pins) Changed(tool []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.changed[string(tool)]; ok {
		return true
	}
	if p.over {
		_, pinned := p.file.Tools[string(tool)]
		return !pinned
	}
	return false
}

// Session is one session's view of the tools/list answers: which pinned
// tools a listing under way has listed (for the removed ones). Used under
// the relay's lock, by one session.
type Session struct {
	p *Pins
	// listing holds the pinned names (those of the pin file, and those
	// pinned on first use by the listing) that the listing under way has
	// listed, so it is bounded as the pin file is; nil: no complete
	// listing under way.
	listing map[string]bool
}

// Session returns a new session's view.
func (p *Pins) Session() *Session {
	if p == nil {
		return nil
	}
	return &Session{p: p}
}

// Answer reads one tools/list answer: msg is the response object, cursor
// whether its request named a cursor (a later page), call its id, dg the
// answer line's digest and n its length. It returns the records that say
// what the answer listed: an anomaly when readers may read it
// differently, another when a bound was met, and the tools record. A tool
// seen first is pinned (trust on first use); one whose definition differs
// from its pin, or that carries a pinned tool's definition under a new
// name, is changed until accepted, its definition kept in the pin file's
// seen for aegis pin diff. A tool past a bound (MaxListed in one answer,
// MaxPinned or MaxDefinition or the pin file's bytes, MaxChanged) is
// never pinned and counts as changed.
func (s *Session) Answer(msg []byte, cursor bool, call record.Call, dg record.Digest, n int) []record.Body {
	l := ReadMessage(msg)
	p := s.p
	if !cursor {
		s.listing = map[string]bool{}
	}
	t := &record.Tools{Event: record.ToolsList, Call: call, ResponseDigest: dg, NextCursor: l.NextCursor}
	var out []record.Body
	why := l.Ambiguous
	p.mu.Lock()
	defer p.mu.Unlock()
	first := map[string]Pin{}
	var unsure []string
	seen := map[string]Pin{}
	room := Room(p.size)
	var bounded, unkept []string // past a bound; changed, their definition not kept
	pastList := 0                // tools past MaxListed
	quiet := map[string]bool{}   // names said in a count, not a line each
	bodies := p.bodies()
	fits := func(name string, pin Pin) bool {
		if len(pin.Definition) > MaxDefinition {
			return false
		}
		cost := EntryBytes(name, pin)
		if cost > room {
			return false
		}
		room -= cost
		return true
	}
	change := func(name, ds string) {
		if !p.markChanged(name, ds) && !quiet[name] {
			bounded = append(bounded, name)
			quiet[name] = true
		}
	}
	for i := range l.Tools {
		d := &l.Tools[i]
		e := record.ToolDigest{Name: record.BoundedOf([]byte(d.Name))}
		if d.Ambiguous != "" {
			e.Pin = record.PinAmbiguous
			if why == "" {
				why = d.Ambiguous
			}
			if d.Ambiguous == ReasonListBound {
				pastList++
				quiet[d.Name] = true
			}
			if d.Name != "" {
				unsure = append(unsure, d.Name)
			}
			unsure = append(unsure, d.Names...) // what other readers take its name to be
			t.Tools = append(t.Tools, e)
			continue
		}
		e.Digest, e.HasDigest = d.Digest, true
		ds := DigestString(d.Digest)
		pinned, ok := p.file.Tools[d.Name]
		switch {
		case ok && pinned.Digest == ds:
			e.Pin = record.PinSame
			delete(p.changed, d.Name)
		case ok:
			e.Pin = record.PinChanged
			change(d.Name, ds)
			if sp := (Pin{Digest: ds, Definition: d.Canonical}); s.keep(d.Name, sp, len(seen), fits) {
				seen[d.Name] = sp
			} else {
				unkept = append(unkept, d.Name)
			}
		default:
			fp := Pin{Digest: ds, Definition: d.Canonical, By: "first use"}
			if from := s.renamed(bodies[bodyDigest(d.Canonical)], l.Tools, d.Name); from != "" {
				e.Pin, e.From = record.PinRenamed, record.BoundedOf([]byte(from))
				change(d.Name, ds)
				if sp := (Pin{Digest: ds, Definition: d.Canonical, From: from}); s.keep(d.Name, sp, len(seen), fits) {
					seen[d.Name] = sp
				} else {
					unkept = append(unkept, d.Name)
				}
			} else if !p.over && len(p.file.Tools)+len(first) < MaxPinned && fits(d.Name, fp) {
				e.Pin = record.PinFirst
				first[d.Name] = fp
			} else {
				e.Pin = record.PinAmbiguous // past what a pin file holds: never passed as pinned
				if !quiet[d.Name] {
					bounded = append(bounded, d.Name)
					quiet[d.Name] = true
				}
				change(d.Name, ds)
			}
		}
		if _, pinned := first[d.Name]; ok || pinned {
			s.listed(d.Name)
		}
		t.Tools = append(t.Tools, e)
	}
	for _, n := range l.Others {
		// A tool another reading of the answer lists.
		unsure = append(unsure, n)
		t.Tools = append(t.Tools, record.ToolDigest{Name: record.BoundedOf([]byte(n)), Pin: record.PinAmbiguous})
	}
	// A name some reader may give an ambiguous tool is changed, whatever
	// its pin and whatever another tool of the answer says, until a
	// listing says otherwise; and it is listed, if pinned.
	for _, n := range unsure {
		change(n, "")
		if _, ok := p.file.Tools[n]; ok {
			s.listed(n)
		}
	}
	if !l.NextCursor && s.listing != nil {
		for name := range p.file.Tools {
			if !s.listing[name] {
				t.Removed = append(t.Removed, record.BoundedOf([]byte(name)))
			}
		}
		slices.SortFunc(t.Removed, func(a, b record.Bounded) int { return compare(a.Text, b.Text) })
		s.listing = nil
	}
	var reasons []string
	if why != "" && why != ReasonListBound {
		reasons = append(reasons, why)
	}
	if pastList > 0 {
		reasons = append(reasons, ReasonListBound)
	}
	if len(bounded)+len(unkept) > 0 {
		reasons = append(reasons, ReasonPinBound)
	}
	for _, r := range reasons {
		out = append(out, &record.Anomaly{Digest: dg, Response: true, Bytes: n, Reason: r, Forwarded: true})
	}
	out = append(out, t)
	p.save(first, seen)
	p.say(t, pastList, bounded, unkept, quiet)
	return out
}

// listed notes that the listing under way lists the pinned tool name.
func (s *Session) listed(name string) {
	if s.listing != nil {
		s.listing[name] = true
	}
}

// keep reports whether the seen definition sp of name goes to the pin
// file (for aegis pin diff and accept): a name already seen is replaced;
// a new one only while seen holds fewer than MaxPinned, n of them new in
// this answer; either only if it fits. Called with mu held.
func (s *Session) keep(name string, sp Pin, n int, fits func(string, Pin) bool) bool {
	if old, ok := s.p.file.Seen[name]; ok && old.Digest == sp.Digest && old.From == sp.From {
		return true // there already
	}
	if _, ok := s.p.file.Seen[name]; !ok && len(s.p.file.Seen)+n >= MaxPinned {
		return false
	}
	return fits(name, sp)
}

func compare(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// save writes first (new pins) and seen (changed definitions) to the pin
// file, if they change it. Called with mu held.
func (p *Pins) save(first, seen map[string]Pin) {
	need := len(first) > 0
	for name, s := range seen {
		if old, ok := p.file.Seen[name]; !ok || old.Digest != s.Digest || old.From != s.From {
			need = true
		}
	}
	if !need {
		return
	}
	f, size, err := update(p.path, func(f *File) (bool, error) {
		if f.Server == "" {
			f.Server = p.server
		}
		// The bounds again, on the file as it is now: another wrap of
		// the server may have added to it since this one read it.
		for name, pin := range first {
			if _, ok := f.Tools[name]; !ok && len(f.Tools) < MaxPinned {
				f.Tools[name] = pin
			}
		}
		for name, s := range seen {
			if f.Seen == nil {
				f.Seen = map[string]Pin{}
			}
			if _, ok := f.Seen[name]; ok || len(f.Seen) < MaxPinned {
				f.Seen[name] = s
			}
		}
		return true, nil
	})
	if err != nil {
		p.logf("tool pins of %s not saved: %v", p.server, err)
		for name, pin := range first {
			p.file.Tools[name] = pin // pinned for this wrap still
		}
		p.bodyIx = nil
		return
	}
	p.setFile(f, size)
	p.gen++
}

// say tells the changes of t on stderr, under on_tool_change warn or
// block, in at most maxSaid lines and a count of the rest; and how many
// tools were past a bound: pastList past MaxListed, bounded past the pin
// file's or the changed table's, unkept changed but their definition not
// kept for aegis pin diff; quiet names those said so, in a count. Called
// with mu held.
func (p *Pins) say(t *record.Tools, pastList int, bounded, unkept []string, quiet map[string]bool) {
	mode := p.mode()
	if pastList > 0 {
		p.logf("a tools/list answer of %s lists more than %d tools: the %d past them are not read, not pinned, and count as changed (on_tool_change: %s)", p.server, MaxListed, pastList, mode)
	}
	if len(bounded) > 0 {
		p.logf("%d tools of %s past what a pin file holds (%d tools, %d bytes a definition, %d bytes in all) or the %d changed tools a wrap keeps: not pinned, and counted as changed (on_tool_change: %s); the first is %q", len(bounded), p.server, MaxPinned, MaxDefinition, MaxFileSize, MaxChanged, mode, bounded[0])
	}
	if len(unkept) > 0 {
		p.logf("%d changed tools of %s past what a pin file holds: their definitions are not kept for aegis pin diff or accept (the first is %q)", len(unkept), p.server, unkept[0])
	}
	if mode == policy.ToolChangeAllow {
		return
	}
	said, more := 0, 0
	tell := func(format string, a ...any) {
		if said < maxSaid {
			p.logf(format, a...)
			said++
		} else {
			more++
		}
	}
	for _, e := range t.Tools {
		switch e.Pin {
		case record.PinChanged:
			tell("tool %q of %s changed since it was pinned (on_tool_change: %s): see aegis pin diff %s %s", e.Name.String(), p.server, mode, p.server, e.Name.String())
		case record.PinRenamed:
			tell("tool %q of %s carries the pinned definition of %q: a rename (on_tool_change: %s)", e.Name.String(), p.server, e.From.String(), mode)
		case record.PinAmbiguous:
			if !quiet[e.Name.String()] {
				tell("tool %q of %s: readers may read its definition differently (on_tool_change: %s)", e.Name.String(), p.server, mode)
			}
		}
	}
	for _, r := range t.Removed {
		tell("tool %q of %s is pinned but no longer listed", r.String(), p.server)
	}
	if more > 0 {
		p.logf("and %d more changes to the tools of %s (aegis pin list %s)", more, p.server, p.server)
	}
}

// bodies maps the digest of each pinned definition without its name to
// the pinned name: a tool listed under another name with one of these is
// a rename. Called with mu held.
func (p *Pins) bodies() map[string][]string {
	if p.bodyIx != nil {
		return p.bodyIx
	}
	m := make(map[string][]string, len(p.file.Tools))
	for name, pin := range p.file.Tools {
		b := bodyDigest(pin.Definition)
		m[b] = append(m[b], name)
	}
	for _, names := range m {
		slices.Sort(names)
	}
	p.bodyIx = m
	return m
}

// renamed returns the pinned tool, among names (those whose definition
// name's carries), that name renames: one that neither this answer nor
// the listing under way lists; "" for none. Two tools that say alike are
// not a rename while both are listed.
func (s *Session) renamed(names []string, answer []Definition, name string) string {
	for _, from := range names {
		if from == name || s.listing[from] {
			continue
		}
		if slices.ContainsFunc(answer, func(d Definition) bool { return d.Name == from }) {
			continue
		}
		return from
	}
	return ""
}

// bodyDigest is the digest of a canonical definition without its name.
func bodyDigest(c []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(c, &m) != nil {
		return ""
	}
	delete(m, "name")
	b, _ := json.Marshal(m) // keys sorted; values canonical already
	return DigestString(sha256.Sum256(b))
}

// Noter appends a record about the session (relay.Relay's Note).
type Noter interface{ Note(record.Body) error }

// Watch rereads the pin file when it changes, until the returned stop is
// called: a changed tool whose pin now holds the definition last listed
// was accepted (aegis pin accept), and after its accept record is
// appended through r (who accepted, as the pin names them), calls to it
// pass again.
func (p *Pins) Watch(r Noter, logf func(string, ...any)) (stop func()) {
	os.MkdirAll(filepath.Dir(p.path), 0o700) // a folder to watch before the first pin
	w, err := policy.Watch(p.path, 0)
	if err != nil {
		logf("pins: not watching %s for acceptances (%v)", p.path, err)
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-w.C():
				p.reread(r, logf)
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		w.Close()
	}
}

// reread reads the pin file afresh and releases the accepted tools.
func (p *Pins) reread(r Noter, logf func(string, ...any)) {
	// A file read while this wrap saved one of its own may be older than
	// what save made p's: read again (save's write wakes the watcher
	// too, so giving up after a few tries loses nothing).
	var f *File
	for try := 0; ; try++ {
		p.mu.Lock()
		gen := p.gen
		p.mu.Unlock()
		var err error
		if f, err = Read(p.path); err != nil {
			logf("pins: %v; the pins read before stay", err)
			return
		}
		size := f.Size()
		p.mu.Lock()
		if p.gen == gen {
			p.setFile(f, size)
			break
		}
		p.mu.Unlock()
		if try == 3 {
			return
		}
	}
	var accepted []*record.Tools
	for name, ds := range p.changed {
		pin, ok := f.Tools[name]
		if !ok || ds == "" || pin.Digest != ds {
			continue
		}
		a := &record.Tools{Event: record.ToolsAccept, Tool: record.BoundedOf([]byte(name)), User: pin.User}
		a.Digest, _ = parseDigest(ds)
		if pin.UID != nil {
			a.UID = *pin.UID
		}
		accepted = append(accepted, a)
	}
	p.mu.Unlock()
	for _, a := range accepted {
		if err := r.Note(a); err != nil {
			logf("pins: acceptance of %s not recorded: %v", a.Tool.String(), err)
			continue
		}
		p.mu.Lock()
		delete(p.changed, string(a.Tool.Text))
		p.mu.Unlock()
		logf("tool %q of %s accepted by %s", a.Tool.String(), p.server, a.User)
	}
}

func parseDigest(s string) (record.Digest, error) {
	var d record.Digest
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*len(d) {
		return d, fmt.Errorf("%w: digest %q", ErrFile, s)
	}
	_, err := hex.Decode(d[:], []byte(h))
	return d, err
}

// Gate returns inner with the pins' decision before it: under
// on_tool_change: block (of the rule set inner decides the frame under),
// a call to a changed tool is refused ToolChanged. A nil inner (no
// policy) is returned as it is: without a policy nothing blocks.
func (p *Pins) Gate(inner gate.Gate) gate.Gate {
	if p == nil || inner == nil {
		return inner
	}
	return &pinGate{p: p, inner: inner}
}

type pinGate struct {
	p     *Pins
	inner gate.Gate
	fd    pinDecider
}

type pinDecider struct {
	p     *Pins
	inner gate.FrameDecider
	block bool
}

func (g *pinGate) Begin(now time.Time) gate.FrameDecider {
	fd := g.inner.Begin(now)
	mode := g.p.mode()
	if m, ok := fd.(interface{ OnToolChange() string }); ok {
		mode = m.OnToolChange()
	}
	g.fd = pinDecider{p: g.p, inner: fd, block: mode == policy.ToolChangeBlock}
	return &g.fd
}

func (d *pinDecider) Set() string { return d.inner.Set() }
func (d *pinDecider) Commit()     { d.inner.Commit() }

// ReasonChanged is the intent's policy reason of a call refused
// TOOL_CHANGED.
const ReasonChanged = "tool definition differs from its pin (on_tool_change: block): aegis pin accept"

func (d *pinDecider) Decide(c *gate.Call) gate.Decision {
	if d.block && d.p.Changed(c.Tool) {
		return gate.Decision{Verdict: gate.ToolChanged, Set: d.inner.Set(), Reason: ReasonChanged}
	}
	return d.inner.Decide(c)
}

// OpenFor opens the pins of server (wrap's --name): the pin file file,
// or the server's default (Path) when file is "".
func OpenFor(file, server string, mode func() string, logf func(string, ...any)) (*Pins, error) {
	path, err := PathFor(file, server)
	if err != nil {
		return nil, err
	}
	return Open(path, server, mode, logf)
}
