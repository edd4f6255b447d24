package pagetoken

import (
	"testing"

	"github.com/planserver/planserver/internal/apierr"
)

func TestRoundTrip(t *testing.T) {
	fp := Fingerprint("parent", "plan")
	tok := Encode("sessions", fp, "42")
	after, err := Decode("sessions", fp, tok)
	if err != nil || after != "42" {
		t.Fatalf("Decode = %q, %v", after, err)
	}
	if after, err := Decode("sessions", fp, ""); err != nil || after != "" {
		t.Errorf("empty token = %q, %v", after, err)
	}
	for name, tc := range map[string]struct{ list, fp, tok string }{
		"other list":    {"plans", fp, tok},
		"other filters": {"sessions", Fingerprint("x"), tok},
		"garbage":       {"sessions", fp, "!!!"},
		"not json":      {"sessions", fp, "bm90IGpzb24"},
	} {
		if _, err := Decode(tc.list, tc.fp, tc.tok); apierr.CodeOf(err) != apierr.InvalidArgument {
			t.Errorf("%s: %v, want invalid_argument", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	fp := Fingerprint("a")
	for _, s := range []string{"", Encode("sessions", fp, "1"), Encode("plans", fp, "x"), "e30", "!!", "eyJsIjoic2Vzc2lvbnMifQ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		after, err := Decode("sessions", fp, tok)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("%q: %v is not invalid_argument", tok, err)
			}
			return
		}
		if tok != "" && after == "" {
			t.Fatalf("%q decoded to an empty position", tok)
		}
	})
}
