package fetch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchDir calls onChange after files under dir change, until ctx ends. A
// burst of changes (an editor's save, a git checkout) makes one call, once
// debounce has passed without another change. Hidden directories are not
// watched, as they are not part of a registry. New directories are watched
// as they appear. ready, if not nil, is called once dir is watched: every
// change after it is reported, so a caller lists dir after ready to miss
// none. It returns when ctx ends, or at once if dir cannot be watched
// (without calling ready).
func WatchDir(ctx context.Context, dir string, debounce time.Duration, ready, onChange func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	defer w.Close()
	if err := watchTree(w, dir); err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	if ready != nil {
		ready()
	}
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if rel, err := filepath.Rel(dir, ev.Name); err == nil && rel != "." && hidden(filepath.ToSlash(rel)) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
					// Errors here mean the directory went again; the
					// next listing tells.
					_ = watchTree(w, ev.Name)
				}
			}
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// An overflow lost events: treat it as a change.
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				timer.Reset(debounce)
			}
		case <-timer.C:
			onChange()
		}
	}
}

// watchTree adds dir and its directories, except hidden ones, to w.
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && hiddenName(d.Name()) {
			return fs.SkipDir
		}
		return w.Add(p)
	})
}
