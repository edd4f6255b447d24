package plans

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/revision"
)

// BenchmarkPut measures conditional writes of 2 KiB plans from 64
// goroutines through the one writer, without HTTP, as planbench's PUT
// scenario makes them: each goroutine its own plan, If-Match the revision
// it last wrote, the same content every time. On SQLite the writer's
// serial time per write is what bounds PUT /v1/plans/{name} on a machine
// with cores to spare (make bench -only writes measures the whole
// request; docs/benchmarks.md).
func BenchmarkPut(b *testing.B) {
	st := NewStore(migrated.Fresh(b), Config{})
	ctx := context.Background()
	title, author, content := "bench", "planbench", strings.Repeat("x", 2048-128)
	ch := Change{Title: &title, Author: &author, Content: &content}
	var workers atomic.Int64
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)) // 64 goroutines, as planbench's connections
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		name := fmt.Sprintf("bench-%d", workers.Add(1))
		var rev int64
		for pb.Next() {
			pre := revision.Precondition{}
			if rev > 0 {
				m, err := revision.ParseMatch("If-Match", strconv.Quote(strconv.FormatInt(rev, 10)))
				if err != nil {
					b.Error(err)
					return
				}
				pre.IfMatch = m
			}
			p, _, err := st.Put(ctx, name, ch, pre)
			if err != nil {
				b.Error(err)
				return
			}
			rev = p.Revision
		}
	})
}
