package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WAL pages per write: what one change costs the disk. One writer, one
// request at a time, so each commit holds one request's write; the WAL
// index (the -shm file SQLite shares between connections) says how many
// frames the WAL holds after each commit, and the difference is the pages
// that commit wrote. A sample during which the WAL restarted (after a
// checkpoint; its salt changes) is dropped.

// walIndex reads the frame count and salt from the header of a WAL index.
// SQLite keeps two copies of the header and writes them in turn; a read
// that sees them differ caught a commit in the middle and is retried.
func walIndex(dbPath string) (frames uint32, salt uint64, err error) {
	for range 100 {
		f, err := os.Open(dbPath + "-shm")
		if err != nil {
			return 0, 0, err
		}
		var hdr [96]byte
		_, err = io.ReadFull(f, hdr[:])
		f.Close()
		if err != nil {
			return 0, 0, err
		}
		if bytes.Equal(hdr[:48], hdr[48:]) {
			// WalIndexHdr: mxFrame (u32) at 16, aSalt (2×u32) at 32, in the
			// machine's byte order.
			return binary.NativeEndian.Uint32(hdr[16:20]), binary.NativeEndian.Uint64(hdr[32:40]), nil
		}
	}
	return 0, 0, fmt.Errorf("%s-shm: the header never read the same twice", dbPath)
}

// walWrite is one kind of write whose pages are counted.
type walWrite struct {
	name string
	do   func(i int) error
}

// walPages measures the pages each kind of write adds to the WAL, on a
// server of its own (the old binary too: it only needs the HTTP API).
func (b *bench) walPages(ctx context.Context) error {
	db := filepath.Join(b.dir, "wal.db")
	srv, err := startServer(b.o, db, "normal")
	if err != nil {
		return err
	}
	defer srv.stop()
	base := srv.base
	put := func(name string, body any, want int) error {
		j, _ := json.Marshal(body)
		return expect(b.c, "PUT", base+"/v1/plans/"+name, bytes.NewReader(j), jsonHeader, want)
	}
	const bigPlan = 256 << 10
	if err := put("wal-small", map[string]any{"content": "x"}, 201); err != nil {
		return err
	}
	steps := []map[string]any{{"id": "a", "description": "first", "owner": "x"}, {"id": "b", "description": "second", "owner": "x", "deps": []string{"a"}}}
	if err := put("wal-big", map[string]any{"content": strings.Repeat("y", bigPlan), "steps": steps}, 201); err != nil {
		return err
	}
	if err := expect(b.c, "POST", base+"/v1/sessions", strings.NewReader(`{"id":"wal-session"}`), jsonHeader, 201); err != nil {
		return err
	}
	writes := []walWrite{
		{"PUT a plan, 2 KiB content changed", func(i int) error {
			return put("wal-small", map[string]any{"content": strconv.Itoa(i) + strings.Repeat("x", 2048)}, 200)
		}},
		{"PATCH a step of a 256 KiB plan", func(i int) error {
			owner := []string{"y", "x"}[i%2]
			return expect(b.c, "PATCH", base+"/v1/plans/wal-big/steps/a", strings.NewReader(`{"owner":"`+owner+`"}`), jsonHeader, 200)
		}},
		{"POST /v1/sessions", func(i int) error {
			return expect(b.c, "POST", base+"/v1/sessions", strings.NewReader(`{"id":"wal-`+strconv.Itoa(i)+`"}`), jsonHeader, 201)
		}},
		{"PATCH a session's mode", func(i int) error {
			mode := []string{"plan", "build"}[i%2]
			return expect(b.c, "PATCH", base+"/v1/sessions/wal-session/mode", strings.NewReader(`{"mode":"`+mode+`"}`), jsonHeader, 200)
		}},
	}
	const samples = 40
	var parts []string
	for _, w := range writes {
		var pages []float64
		for i := 0; i < samples && ctx.Err() == nil; i++ {
			f0, s0, err := walIndex(db)
			if err != nil {
				return err
			}
			if err := w.do(i); err != nil {
				return fmt.Errorf("WAL pages, %s: %w", w.name, err)
			}
			f1, s1, err := walIndex(db)
			if err != nil {
				return err
			}
			if s0 == s1 && f1 >= f0 {
				pages = append(pages, float64(f1-f0))
			}
		}
		if len(pages) < samples/2 {
			return fmt.Errorf("WAL pages, %s: only %d of %d samples without a checkpoint", w.name, len(pages), samples)
		}
		s := spreadOf(pages)
		parts = append(parts, fmt.Sprintf("  %-36s %5.1f (%.0f–%.0f, %d writes)", w.name, s.median, s.lo, s.hi, len(pages)))
	}
	b.notes = append(b.notes, "WAL pages written per write (one writer, --durability normal; median, range):")
	b.notes = append(b.notes, parts...)
	return nil
}
