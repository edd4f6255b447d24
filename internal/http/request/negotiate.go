package request

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
)

// Negotiate picks the representation of a GET from offers (media types
// without parameters, the server's preference first) by the request's
// Accept header (RFC 9110 §12.5.1): the offer with the highest quality
// wins, ties go to the earlier offer, and the most specific matching range
// sets an offer's quality. No Accept header (or an empty one) accepts
// anything. When no offer is acceptable the answer is 406 not_acceptable
// naming the offers, rather than a representation the client refused.
// Malformed ranges are ignored, as if the client had not sent them.
func Negotiate(r *http.Request, offers ...string) (string, error) {
	header := strings.Join(r.Header.Values("Accept"), ",")
	if strings.TrimSpace(header) == "" {
		return offers[0], nil
	}
	ranges := parseAccept(header)
	best, bestQ := "", 0.0
	for _, offer := range offers {
		if q := quality(ranges, offer); q > bestQ {
			best, bestQ = offer, q
		}
	}
	if best == "" {
		return "", apierr.New(apierr.NotAcceptable, "Accept %q admits none of the representations of %s: %s",
			header, r.URL.Path, strings.Join(offers, ", "))
	}
	return best, nil
}

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, sub string
	q        float64
}

func parseAccept(header string) []mediaRange {
	var out []mediaRange
	for _, part := range strings.Split(header, ",") {
		params := strings.Split(part, ";")
		typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(params[0])), "/")
		if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
			continue
		}
		mr := mediaRange{typ: typ, sub: sub, q: 1}
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || !(q >= 0 && q <= 1) { // NaN included
					q = 0 // a malformed weight excludes the range rather than favouring it
				}
				mr.q = q
			}
		}
		out = append(out, mr)
	}
	return out
}

// quality returns the weight the most specific range matching offer gives
// it; 0 when none matches.
func quality(ranges []mediaRange, offer string) float64 {
	typ, sub, _ := strings.Cut(offer, "/")
	q, specificity := 0.0, -1
	for _, mr := range ranges {
		s := -1
		switch {
		case mr.typ == typ && mr.sub == sub:
			s = 2
		case mr.typ == typ && mr.sub == "*":
			s = 1
		case mr.typ == "*":
			s = 0
		}
		if s > specificity {
			q, specificity = mr.q, s
		}
	}
	return q
}
