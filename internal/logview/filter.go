package logview

import (
	"fmt"
	"path"
	"time"
)

// Filter returns the Options of aegis log's --tool and --since (Tool and
// Since; the rest zero): tool a path.Match glob, since a duration back
// from now (90m) or an RFC 3339 time; empty, each filters nothing. The
// errors name the flags.
func Filter(tool, since string, now time.Time) (Options, error) {
	o := Options{Tool: tool}
	if _, err := path.Match(tool, ""); err != nil {
		return o, fmt.Errorf("--tool %q: %v", tool, err)
	}
	if since == "" {
		return o, nil
	}
	if d, err := time.ParseDuration(since); err == nil {
		o.Since = now.Add(-d)
	} else if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		o.Since = t
	} else {
		return o, fmt.Errorf("--since %q is neither a duration (90m) nor an RFC 3339 time", since)
	}
	return o, nil
}
