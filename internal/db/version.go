package db

import "context"

// Version names the committed state of the database as a read that starts
// after the call would see it: while Version returns the same number, no
// write has committed, on this process or any other. A value read before
// a read of the database and read again unchanged later therefore means
// that read's answer is still current, so that answers kept on that
// condition keep reads linearizable (internal/http's answer cache). A
// larger number is a later state.
//
// On SQLite it is this process's commit generation, which moves before any
// write of a commit is acknowledged; the file has no other writer. On
// PostgreSQL every group commit of every replica adds one to the
// commit_version row inside its transaction, and Version reads that row in
// a round trip that starts after the call began. Calls that arrive while
// such a read is in flight share the next one, so under load one round
// trip serves every read that queued behind it (versionReads).
func (db *DB) Version(ctx context.Context) (uint64, error) {
	return db.eng.Version(ctx)
}
