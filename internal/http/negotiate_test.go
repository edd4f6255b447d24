package http

import (
	"net/http/httptest"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

func TestNegotiate(t *testing.T) {
	offers := []string{"application/json", "text/event-stream"}
	cases := []struct {
		accept []string
		want   string // "" for 406
	}{
		{nil, "application/json"},
		{[]string{"*/*"}, "application/json"},
		{[]string{"text/event-stream"}, "text/event-stream"},
		{[]string{"Text/Event-Stream"}, "text/event-stream"},
		{[]string{"application/json"}, "application/json"},
		{[]string{"text/*"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json"}, "application/json"}, // a tie goes to the default
		{[]string{"application/json;q=0.5, text/event-stream"}, "text/event-stream"},
		{[]string{"text/event-stream;q=0.2, */*;q=0.1"}, "text/event-stream"},
		{[]string{"*/*;q=0.9, application/json;q=0"}, "text/event-stream"}, // the specific range wins
		{[]string{"text/html", "text/event-stream"}, "text/event-stream"},  // several header lines
		{[]string{"text/html"}, ""},
		{[]string{"text/event-stream;q=0"}, ""},
		{[]string{"garbage"}, "application/json"},               // nothing parseable: no preference
		{[]string{"text/event-stream;q=2"}, "application/json"}, // an invalid q is ignored
		{[]string{"text/event-stream;q=abc, text/html"}, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/events", nil)
		for _, a := range c.accept {
			r.Header.Add("Accept", a)
		}
		got, err := negotiate(r, offers...)
		if c.want == "" {
			if apierr.CodeOf(err) != apierr.NotAcceptable {
				t.Errorf("%q: %q, %v; want not_acceptable", c.accept, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %s", c.accept, got, err, c.want)
		}
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "*/*", "text/event-stream;q=0.5, application/json;q=0.4", "a/b;q=", ",,,", "text/*;q=1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		r := httptest.NewRequest("GET", "/v1/events", nil)
		r.Header.Set("Accept", accept)
		got, err := negotiate(r, "application/json", "text/event-stream")
		if err == nil && got != "application/json" && got != "text/event-stream" {
			t.Fatalf("%q: chose %q", accept, got)
		}
		if err != nil && apierr.CodeOf(err) != apierr.NotAcceptable {
			t.Fatalf("%q: %v", accept, err)
		}
	})
}
