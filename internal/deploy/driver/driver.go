// Package driver stores the history of deployments: one release.Record per
// revision. Memory keeps it in the process (for tests); Secrets keeps it in
// the cluster, in the deployment's namespace.
//
// # Concurrency
//
// Writes are optimistic, compare-and-swap:
//
//   - Create is create-only. Of two writers of one revision exactly one
//     succeeds; the other gets ErrExists.
//   - Update carries the StorageVersion the record was read with and fails
//     with ErrConflict if the record changed since.
//
// On these the deploy actions build their lock: a record's Lease says which
// action holds it, and the holder renews it with Updates. An action
// (deploy, update, rollback) therefore:
//
//  1. reads History, waits while a record carries a live lease, and takes
//     over one nobody renewed for its duration (a pending revision becomes
//     failed, "interrupted");
//  2. claims the latest revision (Update with its lease), so that an action
//     on that revision itself (a delete) cannot go on at the same time;
//  3. Creates the next revision with StatusPending, the intended objects
//     and its lease, and releases the claim. ErrExists (or a conflict on
//     the claim) means a concurrent action won: it starts again at 1;
//  4. applies the objects, renewing the lease;
//  5. Updates the new revision to StatusDeployed or StatusFailed without
//     the lease, and the previously deployed revision to StatusSuperseded.
//
// A re-run after any interruption starts again at 1 and converges; a dm that
// died holds its deployment for one lease duration at most.
package driver

import (
	"context"
	"fmt"

	"github.com/dmhq/dm/internal/deploy/release"
	"github.com/dmhq/dm/internal/derrors"
)

// Sentinel errors of every driver. They wrap internal/derrors' sentinels,
// so errors.Is(err, derrors.NotFound) holds for ErrNotFound too.
var (
	// ErrNotFound means the revision, or any revision of the deployment,
	// does not exist.
	ErrNotFound = fmt.Errorf("release %w", derrors.NotFound)
	// ErrExists means Create found the revision already recorded: a
	// concurrent action took it.
	ErrExists = fmt.Errorf("release revision %w", derrors.AlreadyExists)
	// ErrConflict means Update found the record changed since it was read.
	ErrConflict = fmt.Errorf("release record changed concurrently: %w", derrors.Conflict)
)

// Driver stores release records.
type Driver interface {
	// Create records a new revision. It is create-only: ErrExists if
	// r.Namespace/r.Name/r.Revision exists. It sets r.StorageVersion.
	Create(ctx context.Context, r *release.Record) error
	// Update replaces a revision's record, provided it has not changed
	// since r was read (r.StorageVersion); else ErrConflict. ErrNotFound if
	// the revision does not exist. It sets r.StorageVersion.
	Update(ctx context.Context, r *release.Record) error
	// Get returns one revision, ErrNotFound if it does not exist.
	Get(ctx context.Context, namespace, name string, revision int) (*release.Record, error)
	// History returns every revision of a deployment, oldest first;
	// ErrNotFound if there is none.
	History(ctx context.Context, namespace, name string) ([]*release.Record, error)
	// List returns the latest revision of each deployment in namespace,
	// ordered by namespace and name; namespace "" means all namespaces.
	List(ctx context.Context, namespace string) ([]*release.Record, error)
	// Delete removes one revision; ErrNotFound if it does not exist.
	Delete(ctx context.Context, namespace, name string, revision int) error
}

// errNotFound returns ErrNotFound naming a revision (revision 0: any).
func errNotFound(namespace, name string, revision int) error {
	if revision == 0 {
		return fmt.Errorf("deployment %s/%s: %w", namespace, name, ErrNotFound)
	}
	return fmt.Errorf("deployment %s/%s revision %d: %w", namespace, name, revision, ErrNotFound)
}
