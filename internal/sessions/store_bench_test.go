package sessions

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/dbtest/migrated"
)

// BenchmarkCreate measures session creates from 64 goroutines through the
// one writer, without HTTP: on SQLite the writer's serial time per create
// is what bounds POST /v1/sessions on a machine with cores to spare
// (make bench -only writes measures the whole request; docs/benchmarks.md).
func BenchmarkCreate(b *testing.B) {
	st := NewStore(migrated.Fresh(b), Config{})
	var n atomic.Int64
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)) // 64 goroutines, as planbench's connections
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("s-%d", n.Add(1))
			if _, err := st.Create(context.Background(), api.SessionCreate{ID: &id, Title: "bench", Agent: "bench"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
