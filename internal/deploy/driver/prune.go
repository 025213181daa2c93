package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/dmhq/dm/internal/deploy/release"
)

// DefaultHistoryMax is the number of revisions dm keeps of a deployment
// unless told otherwise (--history-max).
const DefaultHistoryMax = 10

// Prune deletes the oldest revisions of a deployment beyond max, keeping
// the latest revision and the latest deployed one (the target of a
// rollback) even if that leaves more than max. max <= 0 keeps everything.
// A deployment with no history is not an error.
func Prune(ctx context.Context, d Driver, namespace, name string, max int) error {
	if max <= 0 {
		return nil
	}
	hist, err := d.History(ctx, namespace, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	keep := map[int]bool{hist[len(hist)-1].Revision: true}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Status == release.StatusDeployed {
			keep[hist[i].Revision] = true
			break
		}
	}
	excess := len(hist) - max
	for _, r := range hist {
		if excess <= 0 {
			break
		}
		if keep[r.Revision] {
			continue
		}
		if err := d.Delete(ctx, namespace, name, r.Revision); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("pruning history of %s/%s: %w", namespace, name, err)
		}
		excess--
	}
	return nil
}
