package policy

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultSettle is how long a Watcher waits for a burst of file events to
// end before it reports a change: an editor's save is several events
// (truncate, write, rename, chmod), and a reload in the middle of one would
// read half a file.
const DefaultSettle = 100 * time.Millisecond

// Watcher reports changes of one policy file. It watches the file's
// directory, not the file, because editors and deployment tools replace a
// file by renaming another over it, which ends a watch on the file itself.
// Only events naming the file count; a change of a symlink's target
// elsewhere is not seen (send SIGHUP).
type Watcher struct {
	w    *fsnotify.Watcher
	name string
	c    chan struct{}
	done chan struct{}
	errs chan error
}

// Watch starts watching path. A change is reported on C once no event has
// named the file for settle (DefaultSettle if settle <= 0).
func Watch(path string, settle time.Duration) (*Watcher, error) {
	if settle <= 0 {
		settle = DefaultSettle
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("policy: watch %s: %w", path, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("policy: watch %s: %w", path, err)
	}
	if err := fw.Add(filepath.Dir(abs)); err != nil {
		fw.Close()
		return nil, fmt.Errorf("policy: watch %s: %w", path, err)
	}
	w := &Watcher{w: fw, name: abs, c: make(chan struct{}, 1), done: make(chan struct{}), errs: make(chan error, 1)}
	go w.loop(settle)
	return w, nil
}

// C delivers a token after the file changed. Tokens coalesce: one token may
// stand for several changes. The receiver reads the file afresh.
func (w *Watcher) C() <-chan struct{} { return w.c }

// Errors delivers the watcher's errors (an overflowed event queue, for
// one); the latest is kept if nobody reads.
func (w *Watcher) Errors() <-chan error { return w.errs }

// Close stops watching and waits for the watcher's goroutine to end.
func (w *Watcher) Close() error {
	err := w.w.Close()
	<-w.done
	return err
}

func (w *Watcher) loop(settle time.Duration) {
	defer close(w.done)
	timer := time.NewTimer(settle)
	timer.Stop()
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				timer.Stop()
				return
			}
			if filepath.Clean(ev.Name) != w.name || ev.Op == fsnotify.Chmod {
				continue
			}
			timer.Reset(settle)
		case err, ok := <-w.w.Errors:
			if !ok {
				timer.Stop()
				return
			}
			select {
			case <-w.errs:
			default:
			}
			w.errs <- err
			// A lost event may have been the file's: check it.
			timer.Reset(settle)
		case <-timer.C:
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
	}
}
