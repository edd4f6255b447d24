// Package pagetoken owns the opaque page tokens of keyset-paginated lists.
// A token names the list it belongs to, a fingerprint of the filters it was
// issued for, and the position after which the next page starts. Clients
// must treat it as opaque; a token used with another list or other filters
// is rejected rather than silently giving a wrong page.
package pagetoken

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
)

type token struct {
	List    string `json:"l"`
	Filters string `json:"f"`
	After   string `json:"a"`
}

// Fingerprint summarises a list's filter values.
func Fingerprint(filters ...string) string {
	h := sha256.Sum256([]byte(strings.Join(filters, "\x00")))
	return hex.EncodeToString(h[:6])
}

// Encode returns the token for the page of list (filtered as fingerprint)
// that starts after position after.
func Encode(list, fingerprint, after string) string {
	raw, _ := json.Marshal(token{List: list, Filters: fingerprint, After: after})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Decode returns the position a token points after. An empty token means
// the first page (""). A token that is malformed, or was issued for another
// list or other filters, is an invalid_argument error on page_token.
func Decode(list, fingerprint, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	var t token
	if err != nil || json.Unmarshal(raw, &t) != nil || t.List != list || t.After == "" {
		return "", apierr.Invalid("page_token", "not a page token of this list; pass next_page_token back unchanged")
	}
	if t.Filters != fingerprint {
		return "", apierr.Invalid("page_token", "was issued for other filters; repeat the filters of the first page")
	}
	return t.After, nil
}
