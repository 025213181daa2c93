// Package driver stores the history of deployments: one release.Record per
// revision. Memory keeps it in the process (for tests); Secrets keeps it in
// the cluster, in the deployment's namespace.
//
// # Concurrency
//
// There is no lock. Writes are optimistic, so an interrupted dm (Ctrl-C,
// kill -9, a lost connection) never blocks the next command:
//
//   - Create is create-only. Of two writers of one revision exactly one
//     succeeds; the other gets ErrExists.
//   - Update carries the StorageVersion the record was read with and fails
//     with ErrConflict if the record changed since.
//
// An action (deploy, update, rollback) therefore:
//
//  1. reads History and computes the next revision as the highest + 1;
//  2. turns any pending revision into failed ("interrupted"): a pending
//     revision is only what an interrupted dm left behind;
//  3. Creates the next revision with StatusPending and the intended objects.
//     ErrExists means a concurrent action took that revision: report the
//     conflict and change nothing (apply nothing, update no record);
//  4. applies the objects;
//  5. Updates the new revision to StatusDeployed or StatusFailed, and the
//     previously deployed revision to StatusSuperseded.
//
// A re-run after any interruption starts again at 1 and converges.
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
