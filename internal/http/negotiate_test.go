package http

import (
	"net/http/httptest"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

func TestNegotiate(t *testing.T) {
	offers := []string{"application/json", "text/markdown"}
	cases := []struct {
		accept string
		want   string // "" for 406
	}{
		{"", "application/json"},
		{"*/*", "application/json"},
		{"text/markdown", "text/markdown"},
		{"text/*", "text/markdown"},
		{"application/json", "application/json"},
		{"text/markdown, application/json", "application/json"}, // a tie goes to the server's preference
		{"text/markdown, application/json;q=0.9", "text/markdown"},
		{"application/json;q=0.1, text/markdown;q=0.2", "text/markdown"},
		{"*/*;q=0.1, text/markdown;q=0", "application/json"},
		{"text/markdown;q=0, */*", "application/json"},
		{"text/markdown;q=0", ""},
		{"image/png", ""},
		{"garbage;;", ""},
		{"text/markdown; charset=utf-8", "text/markdown"},
		{"*/*;q=bad", "application/json"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		got, err := negotiate(r, offers...)
		if c.want == "" {
			if apierr.CodeOf(err) != apierr.NotAcceptable {
				t.Errorf("Accept %q: %q %v, want 406", c.accept, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Accept %q: %q %v, want %q", c.accept, got, err, c.want)
		}
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "*/*", "text/markdown;q=0.5, application/json;q=0.4", "a/b;q=", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		got, err := negotiate(r, "application/json", "text/markdown")
		if err == nil && got != "application/json" && got != "text/markdown" {
			t.Fatalf("Accept %q gave %q", accept, got)
		}
		if err != nil && apierr.CodeOf(err) != apierr.NotAcceptable {
			t.Fatalf("Accept %q: %v", accept, err)
		}
	})
}
