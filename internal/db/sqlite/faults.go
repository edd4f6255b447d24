package sqlite

import (
	"errors"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/planserver/planserver/internal/db"
)

// classify returns the fault a SQLite error is (ours: err is
// SQLite's), or nil when it is none.
func classify(err error) (f *db.Fault, ours bool) {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return nil, false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return &db.Fault{Kind: db.ErrDiskFull, Detail: "the database's disk is full"}, true
	case sqlite3.SQLITE_READONLY:
		return &db.Fault{Kind: db.ErrUnavailable, Detail: "the database cannot take writes: its file is read-only to this server (check the file's owner and permissions, and the file system)"}, true
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return &db.Fault{Kind: db.ErrUnavailable, Detail: "the database file is damaged; an operator must restore it from a backup"}, true
	case sqlite3.SQLITE_IOERR:
		return &db.Fault{Kind: db.ErrUnavailable, Detail: "the database's disk reports an I/O error"}, true
	case sqlite3.SQLITE_CANTOPEN:
		return &db.Fault{Kind: db.ErrUnavailable, Detail: "the database file cannot be opened"}, true
	}
	return nil, true
}

// isCorrupt reports whether err says the database file is damaged.
func isCorrupt(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// minFreeBytes is the free space a database's file system needs, after a
// full disk, before the database reports ready again: a probe write of a
// page may fit into what a failed write left behind, but real writes would
// fail again at once.
const minFreeBytes = 1 << 20
