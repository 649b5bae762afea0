package approval

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegisrelay/aegis/journal/record"
)

// DefaultTimeout is how long a parked call waits for a decision when wrap's
// --approval-timeout does not say.
const DefaultTimeout = 5 * time.Minute

// Errors of Decide.
var (
	// ErrUnknown: no call waits under the id.
	ErrUnknown = errors.New("no call awaits approval under this id")
	// ErrDecided: the id was decided already (approved, denied or
	// expired) or its session ended: it releases nothing more.
	ErrDecided = errors.New("approval already decided")
)

// Decision is what decides a parked call.
type Decision struct {
	// Verdict is record.ApprovalApproved, ApprovalDenied or ApprovalExpired.
	Verdict string
	// HasBy: the approver is known (UID and User, or Principal); false
	// for an expiry.
	HasBy bool
	UID   uint64
	User  string
	// Principal, when set, names the approver in place of UID and User:
	// who the HTTP front's approver token proved to be ("token:<id>").
	Principal string
	// Reason is the approver's reason for a denial (at most MaxReason
	// bytes of valid UTF-8: Decide makes it so), or aegis's own for an
	// expiry.
	Reason string
}

// MaxReason bounds an approver's reason, in bytes.
const MaxReason = 512

// Resolver carries out a decision: the relay that parked the call
// releases it to the child or refuses it. It returns an error when the
// call can no longer be decided (its session ended).
type Resolver interface {
	Resolve(id string, d Decision) error
}

// Pending is a parked call as approvers see it.
type Pending struct {
	ID     string    `json:"id"`
	Server string    `json:"server"`
	Tool   string    `json:"tool"` // quoted (Quote)
	Args   string    `json:"arguments"`
	Caller string    `json:"caller"`
	Since  time.Time `json:"since"`
	Expiry time.Time `json:"expires"`
}

// Table is one wrap's parked calls. Its methods are safe for concurrent
// use.
type Table struct {
	timeout time.Duration

	mu      sync.Mutex
	pending map[string]*entry
	decided map[string]string // id → how it ended, for ErrDecided's message
	order   []string          // decided ids, oldest first, to bound decided
}

type entry struct {
	p     Pending
	r     Resolver
	timer *time.Timer
}

// maxDecided bounds the ids a Table remembers as decided: beyond it the
// oldest answer ErrUnknown instead of ErrDecided (neither releases
// anything).
const maxDecided = 4096

// NewTable returns a Table whose calls expire after timeout (> 0).
func NewTable(timeout time.Duration) *Table {
	if timeout <= 0 {
		panic("approval: NewTable without a positive timeout")
	}
	return &Table{timeout: timeout, pending: map[string]*entry{}, decided: map[string]string{}}
}

// Timeout is how long a parked call waits.
func (t *Table) Timeout() time.Duration { return t.timeout }

// NewID returns a fresh approval id: 16 lower-case hex digits from the
// system's random source, so that an id cannot be guessed from another.
func NewID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Park adds p (its ID from NewID, Since set) and starts its expiry: after
// the Table's timeout it is decided ApprovalExpired. r carries out its
// decision. Park sets p.Expiry.
func (t *Table) Park(p Pending, r Resolver) {
	p.Expiry = p.Since.Add(t.timeout)
	e := &entry{p: p, r: r}
	t.mu.Lock()
	t.pending[p.ID] = e
	e.timer = time.AfterFunc(time.Until(p.Expiry), func() {
		t.Decide(p.ID, Decision{Verdict: record.ApprovalExpired, Reason: "no decision within " + t.timeout.String()})
	})
	t.mu.Unlock()
}

// Decide decides the call parked under id, once: the id is removed before
// r.Resolve runs, so a second Decide of it fails with ErrDecided. It
// returns the Resolver's error, or ErrUnknown or ErrDecided.
func (t *Table) Decide(id string, d Decision) error {
	d.Reason = bound(d.Reason)
	t.mu.Lock()
	e := t.pending[id]
	if e == nil {
		how, ok := t.decided[id]
		t.mu.Unlock()
		if ok {
			return fmt.Errorf("%w: %s", ErrDecided, how)
		}
		return ErrUnknown
	}
	delete(t.pending, id)
	e.timer.Stop()
	t.remember(id, d.Verdict)
	t.mu.Unlock()
	if err := e.r.Resolve(id, d); err != nil {
		return err
	}
	return nil
}

// Drop removes the call parked under id without a decision: its session
// ended.
func (t *Table) Drop(id string) {
	t.mu.Lock()
	if e := t.pending[id]; e != nil {
		delete(t.pending, id)
		e.timer.Stop()
		t.remember(id, "ended with its session")
	}
	t.mu.Unlock()
}

// remember notes id as decided. Called with mu held.
func (t *Table) remember(id, how string) {
	if len(t.order) >= maxDecided {
		delete(t.decided, t.order[0])
		t.order = t.order[1:]
	}
	t.decided[id] = how
	t.order = append(t.order, id)
}

// List returns the calls waiting, oldest first.
func (t *Table) List() []Pending {
	t.mu.Lock()
	ps := make([]Pending, 0, len(t.pending))
	for _, e := range t.pending {
		ps = append(ps, e.p)
	}
	t.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool {
		if !ps[i].Since.Equal(ps[j].Since) {
			return ps[i].Since.Before(ps[j].Since)
		}
		return ps[i].ID < ps[j].ID
	})
	return ps
}

// MaxShown bounds the bytes of a client's value a listing quotes.
const MaxShown = 200

// Quote is b as a listing shows it: at most MaxShown bytes of it (whole
// characters), in Go's quoted syntax with every character that is not
// graphic escaped, and how long it was when cut.
func Quote(b []byte) string {
	cut := len(b) > MaxShown
	s := b
	if cut {
		n := MaxShown
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		s = b[:n]
	}
	q := strconv.QuoteToGraphic(string(s))
	if cut {
		q += "… (" + strconv.Itoa(len(b)) + " bytes)"
	}
	return q
}

// bound makes an approver's reason valid UTF-8 of at most MaxReason bytes.
func bound(s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // invalid bytes become U+FFFD
	}
	if len(s) > MaxReason {
		n := MaxReason
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}
