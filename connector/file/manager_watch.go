package file

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// maxWatchedDirs bounds inotify watches (a per-user kernel limit shared
// with other programs); beyond it discovery relies on polling alone.
const maxWatchedDirs = 256

// watcher turns fsnotify events into hints for the poll loop: names that
// were written and whether a rescan is worth doing now. It never decides
// anything on its own; scans remain the source of truth, so dropped or
// overflowed events only delay discovery until the next scan.
type watcher struct {
	w    *fsnotify.Watcher
	log  *slog.Logger
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	written map[string]struct{}
	rescan  bool

	dirs map[string]struct{} // owned by the poll goroutine
}

func newWatcher(log *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, err
	}
	w := &watcher{
		w:       fw,
		log:     log,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		written: make(map[string]struct{}),
		dirs:    make(map[string]struct{}),
	}
	w.wg.Add(1)
	go w.run()
	return w, nil
}

func (w *watcher) run() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			w.mu.Lock()
			if ev.Has(fsnotify.Write) {
				if len(w.written) < 4096 {
					w.written[ev.Name] = struct{}{}
				} else {
					w.rescan = true
				}
			}
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
				w.rescan = true
			}
			w.mu.Unlock()
			w.notify()
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				w.rescan = true
				w.mu.Unlock()
				w.notify()
				continue
			}
			w.log.Debug("fsnotify error", "error", err)
		}
	}
}

func (w *watcher) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take returns and clears the names written and the rescan hint.
func (w *watcher) take() ([]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for n := range w.written {
		names = append(names, n)
	}
	clear(w.written)
	r := w.rescan
	w.rescan = false
	return names, r
}

// sync makes the watched directories match dirs (bounded).
func (w *watcher) sync(dirs []string) {
	want := make(map[string]struct{}, len(dirs))
	for _, d := range dirs {
		if len(want) >= maxWatchedDirs {
			break
		}
		want[d] = struct{}{}
	}
	for d := range w.dirs {
		if _, ok := want[d]; !ok {
			_ = w.w.Remove(d)
			delete(w.dirs, d)
		}
	}
	for d := range want {
		if _, ok := w.dirs[d]; ok {
			continue
		}
		if err := w.w.Add(d); err == nil {
			w.dirs[d] = struct{}{}
		}
	}
}

// close stops the event goroutine and waits for it.
func (w *watcher) close() error {
	close(w.done)
	err := w.w.Close()
	w.wg.Wait()
	return err
}

// watchDirs lists directories whose changes should wake discovery: each
// pattern's base and each tracked file's directory.
func (mg *manager) watchDirs(ring []*tracked) []string {
	set := make(map[string]struct{})
	for _, p := range mg.pats {
		d := p.Base()
		if p.Literal() {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				d = filepath.Dir(d)
			}
		}
		set[d] = struct{}{}
	}
	for _, t := range ring {
		set[filepath.Dir(t.path)] = struct{}{}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
