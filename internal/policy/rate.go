package policy

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Rate is a rule's rate: at most N calls per Per, as a token bucket of N
// tokens refilled at N/Per. A full bucket lets N calls through at once; the
// N+1th in the window is refused with RATE_LIMITED, and one token comes back
// every Per/N.
type Rate struct {
	N   int
	Per time.Duration
}

// Bounds of a rate, so that every accepted rate is a bucket rate.Limiter
// handles exactly.
const (
	maxRateN   = 1_000_000_000
	minRatePer = time.Millisecond
	maxRatePer = 366 * 24 * time.Hour
)

var errRate = errors.New(`want N/s, N/m, N/h, N/d or N/<duration> (such as 10/m or 5/30s), N a whole number from 1 to 1000000000`)

// parseRate parses "N/UNIT": UNIT is s, m, h or d (second, minute, hour,
// day), or a Go duration such as 30s or 1h30m.
func parseRate(s string) (Rate, error) {
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, errRate
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > maxRateN || num[0] == '+' {
		return Rate{}, errRate
	}
	var per time.Duration
	switch unit {
	case "s":
		per = time.Second
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	case "d":
		per = 24 * time.Hour
	default:
		if per, err = time.ParseDuration(unit); err != nil || per < minRatePer || per > maxRatePer {
			return Rate{}, errRate
		}
	}
	return Rate{N: n, Per: per}, nil
}

// String returns the rate in the form parseRate reads.
func (r Rate) String() string {
	unit := r.Per.String()
	switch r.Per {
	case time.Second:
		unit = "s"
	case time.Minute:
		unit = "m"
	case time.Hour:
		unit = "h"
	case 24 * time.Hour:
		unit = "d"
	}
	return strconv.Itoa(r.N) + "/" + unit
}

func (r Rate) limiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(float64(r.N)/r.Per.Seconds()), r.N)
}
