package userfiles

import (
	"os"
	"path/filepath"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// TlogIndex is the user's index of sealed segments (journal/tlog/doc.go,
// "Index"): aegis/tlog-index in the user's cache folder (os.UserCacheDir:
// $XDG_CACHE_HOME, by default ~/.cache), where wrap adds each segment it
// seals and prove reads them; nil when there is no cache folder to keep
// it in.
func TlogIndex() *tlog.Index {
	d, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	return tlog.NewIndex(filepath.Join(d, "aegis", "tlog-index"))
}
