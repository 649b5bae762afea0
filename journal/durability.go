package journal

import (
	"fmt"
	"strings"
	"time"
)

// Level is how soon a record is forced to stable storage.
type Level uint8

// The durability levels, weakest first.
const (
	None     Level = iota // written; the OS decides when it reaches the disk
	Interval              // written; synced in the background every Durability.Every
	Reply                 // intents written before the request moves, intent and outcome durable before the response moves
	Strict                // every record durable before the frame it describes moves
)

// DefaultInterval is the background sync period of the interval level.
const DefaultInterval = 50 * time.Millisecond

// Durability is a level and, for Interval, its period.
type Durability struct {
	Level Level
	Every time.Duration
}

// ParseDurability parses "strict", "reply", "interval", "interval:D", "none"
// and the aliases G3, G2, G1, G1:D, G0 (case-insensitive).
func ParseDurability(s string) (Durability, error) {
	name, period, hasPeriod := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	var d Durability
	switch name {
	case "strict", "g3":
		d.Level = Strict
	case "reply", "g2":
		d.Level = Reply
	case "interval", "g1":
		d.Level, d.Every = Interval, DefaultInterval
	case "none", "g0":
		d.Level = None
	default:
		return d, fmt.Errorf("unknown durability %q (want strict, reply, interval[:D] or none; or G3..G0)", s)
	}
	if hasPeriod {
		if d.Level != Interval {
			return d, fmt.Errorf("durability %q: only interval takes a period", s)
		}
		p, err := time.ParseDuration(period)
		if err != nil || p <= 0 {
			return d, fmt.Errorf("durability %q: period must be a positive duration such as 50ms", s)
		}
		d.Every = p
	}
	return d, nil
}

// String returns the canonical name, as recorded in session_start.
func (d Durability) String() string {
	switch d.Level {
	case Strict:
		return "strict"
	case Reply:
		return "reply"
	case Interval:
		return "interval:" + d.Every.String()
	}
	return "none"
}

// Barrier names what is about to move once a record is as durable as the
// level requires: a request towards the child, or a response (or an aegis
// refusal) towards the client.
type Barrier uint8

const (
	BeforeRequest Barrier = iota
	BeforeResponse
)

// needsSync reports whether the level requires fdatasync before a frame
// crosses the barrier.
func (d Durability) needsSync(b Barrier) bool {
	switch d.Level {
	case Strict:
		return true
	case Reply:
		return b == BeforeResponse
	}
	return false
}
