package logview

import (
	"fmt"
	"os"
	"time"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Server is a line of aegis log's list of the servers with default logs
// (userfiles.Servers): a server's logs, their files and bytes, and when
// one was last written.
type Server struct {
	Name     string    `json:"name"`
	Logs     []string  `json:"logs"`
	Files    int       `json:"files"` // the logs' files, sealed segments included
	Bytes    int64     `json:"bytes"`
	Modified time.Time `json:"modified"`
}

// Summarize returns s's line. A log whose files cannot be listed is an
// error; a file that cannot be read is left out of the counts.
func Summarize(s userfiles.Server) (Server, error) {
	r := Server{Name: s.Name, Logs: s.Logs}
	in, err := segment.Collect(s.Logs, true)
	if err != nil {
		return r, err
	}
	for _, set := range in.Sets {
		for _, p := range set.Paths {
			if n, mod, err := contentSize(p); err == nil {
				r.Files++
				r.Bytes += n
				if mod.After(r.Modified) {
					r.Modified = mod
				}
			}
		}
	}
	return r, nil
}

// contentSize is the size of a log's file without the pre-zeroed space
// at the end of a live file (segment.ContentEnd), and its mtime.
func contentSize(path string) (int64, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, time.Time{}, err
	}
	n, err := segment.ContentEnd(f, st.Size())
	return n, st.ModTime(), err
}

// FormatSize is a size for people: bytes, KiB, MiB, GiB or TiB.
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}
