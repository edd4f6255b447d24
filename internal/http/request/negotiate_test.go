package request

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

func TestNegotiate(t *testing.T) {
	offers := []string{"application/json", "text/markdown", "application/yaml"}
	cases := []struct {
		accept []string
		want   string // "" for 406
	}{
		{nil, "application/json"},
		{[]string{""}, "application/json"},
		{[]string{"*/*"}, "application/json"},
		{[]string{"application/json"}, "application/json"},
		{[]string{"TEXT/Markdown"}, "text/markdown"},
		{[]string{"text/markdown; charset=utf-8"}, "text/markdown"},
		{[]string{"text/*"}, "text/markdown"},
		{[]string{"application/*"}, "application/json"},
		{[]string{"application/yaml, application/json"}, "application/json"}, // equal q: server preference
		{[]string{"application/yaml, application/json;q=0.9"}, "application/yaml"},
		{[]string{"text/html, */*;q=0.1"}, "application/json"},
		{[]string{"application/json;q=0, */*"}, "text/markdown"},    // the specific range wins over */*
		{[]string{"*/*;q=0, text/markdown;q=0.3"}, "text/markdown"}, // likewise
		{[]string{"text/html", "application/yaml"}, "application/yaml"},
		{[]string{"application/json;q=abc, text/markdown"}, "text/markdown"}, // a bad weight excludes
		{[]string{"application/json;q=2, text/markdown"}, "text/markdown"},
		{[]string{"application/json;q=nan, text/markdown;q=0.1"}, "text/markdown"},
		{[]string{"garbage, text/markdown"}, "text/markdown"},
		{[]string{"*/json"}, ""}, // malformed: ignored, nothing left
		{[]string{"text/html"}, ""},
		{[]string{"application/xml, image/*"}, ""},
		{[]string{"*/*;q=0"}, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/plans/x", nil)
		for _, a := range c.accept {
			r.Header.Add("Accept", a)
		}
		got, err := Negotiate(r, offers...)
		if c.want == "" {
			if apierr.CodeOf(err) != apierr.NotAcceptable {
				t.Errorf("Accept %q: %q, %v; want 406", c.accept, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Accept %q: %q, %v; want %s", c.accept, got, err, c.want)
		}
	}
}

// FuzzNegotiate: any Accept header yields one of the offers or a 406.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "*/*", "text/*;q=0.5, application/json", "a/b;q=;;,", ";q=1", "*/*;q=0,text/markdown;q=0.001"} {
		f.Add(s)
	}
	offers := []string{"application/json", "text/markdown", "application/yaml"}
	f.Fuzz(func(t *testing.T, accept string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		got, err := Negotiate(r, offers...)
		if err != nil {
			if apierr.CodeOf(err) != apierr.NotAcceptable {
				t.Fatalf("%q: %v", accept, err)
			}
			return
		}
		if !slices.Contains(offers, got) {
			t.Fatalf("%q chose %q", accept, got)
		}
	})
}
