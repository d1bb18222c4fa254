// Package dbtest damages SQLite database files, for the tests of what must
// notice: a store refusing to start on a corrupt database.
package dbtest

import (
	"database/sql"
	"os"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// DamageTable overwrites the b-tree header of table's root page in the
// database file at path with bytes no page holds, as a torn write or a bad
// sector would. Reads of the table then fail, and so does SQLite's
// quick_check; other tables read as before. The file must not be open,
// and must hold all its pages (no write-ahead log left beside it).
func DamageTable(t testing.TB, path, table string) {
	t.Helper()
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatalf("damaging %s: it has a write-ahead log; close it first", path)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	err = db.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&root)
	if err == nil {
		err = db.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	}
	db.Close()
	if err != nil {
		t.Fatalf("damaging %s: finding table %s: %v", path, table, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if _, err := f.WriteAt(garbage, (root-1)*pageSize); err != nil {
		t.Fatalf("damaging %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("damaging %s: %v", path, err)
	}
}
