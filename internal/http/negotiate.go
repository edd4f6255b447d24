package http

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
)

// negotiate picks the response media type from offers (the server's
// preference first) by the request's Accept header (RFC 9110 §12.5.1): the
// offer with the highest quality wins, ties go to the earlier offer, and a
// missing Accept header means the first offer. When Accept rules out every
// offer, it answers 406 not_acceptable.
func negotiate(r *http.Request, offers ...string) (string, error) {
	header := strings.Join(r.Header.Values("Accept"), ",")
	if strings.TrimSpace(header) == "" {
		return offers[0], nil
	}
	best, bestQ := "", 0.0
	for _, offer := range offers {
		if q := acceptQuality(header, offer); q > bestQ {
			best, bestQ = offer, q
		}
	}
	if best == "" {
		return "", apierr.New(apierr.NotAcceptable, "Accept %q allows none of %s", header, strings.Join(offers, ", "))
	}
	return best, nil
}

// acceptQuality is the quality the Accept header gives offer: that of the
// most specific media range matching it (type/subtype over type/* over
// */*), 0 when none does.
func acceptQuality(header, offer string) float64 {
	otype, _, _ := strings.Cut(offer, "/")
	q, specificity := 0.0, -1
	for _, part := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		rtype, rsub, _ := strings.Cut(mt, "/")
		var spec int
		switch {
		case mt == offer:
			spec = 2
		case rtype == otype && rsub == "*":
			spec = 1
		case mt == "*/*":
			spec = 0
		default:
			continue
		}
		if spec <= specificity {
			continue
		}
		specificity, q = spec, 1
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
				q = f
			}
		}
	}
	return q
}
