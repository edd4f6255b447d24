package gates_test

import (
	"context"
	"testing"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	"github.com/planserver/planserver/internal/gates"
)

// TestRegistry: a gate is put, read, listed and deleted by its name; a
// name that is not a path segment, or a URL that is not an http(s) MCP
// server's, is invalid_argument; a missing gate is not_found.
func TestRegistry(t *testing.T) {
	ctx := context.Background()
	st := gates.NewStore(migrated.Fresh(t))
	g, created, err := st.Put(ctx, "docs", api.GateWrite{URL: "http://127.0.0.1:9/mcp", ReadOnlyTools: []string{"search"}})
	if err != nil || !created || g.Name != "docs" {
		t.Fatalf("put: %v, created %v, %+v", err, created, g)
	}
	if got, err := st.Get(ctx, "docs"); err != nil || got.URL != "http://127.0.0.1:9/mcp" {
		t.Fatalf("get: %v, %+v", err, got)
	}
	if list, err := st.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("list: %v, %+v", err, list)
	}
	if _, err := st.Get(ctx, "Not A Name"); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("get of a bad name: %v, want invalid_argument", err)
	}
	if _, _, err := st.Put(ctx, "ftp", api.GateWrite{URL: "ftp://example.com/"}); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("put of an ftp URL: %v, want invalid_argument", err)
	}
	if err := st.Delete(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "docs"); apierr.CodeOf(err) != apierr.NotFound {
		t.Errorf("get after delete: %v, want not_found", err)
	}
}
