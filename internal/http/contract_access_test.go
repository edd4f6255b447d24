package http_test

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/auth"
)

// TestContractListsAccessResponses checks api/openapi.yaml against
// auth.Routes: every /v1 operation lists 401, 429 and 403 (with --auth
// none any route refuses a foreign Host, origin.go, and otherwise some
// role is denied it or its body can make it a denied action); 404
// when it targets a session, which an agent's scope can hide. The ops
// endpoints are open, and only the event feed takes ?access_token=.
func TestContractListsAccessResponses(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("global security = %v, want bearerAuth", doc.Security)
	}
	for route, rule := range auth.Routes {
		method, path, _ := strings.Cut(route, " ")
		item := doc.Paths.Find(path)
		var op *openapi3.Operation
		if item != nil {
			op = item.GetOperation(method)
		}
		if op == nil {
			t.Errorf("%s is not in openapi.yaml", route)
			continue
		}
		want := map[string]bool{"401": true, "429": true, "403": true}
		if rule.SessionParam != "" || rule.SessionQuery != "" {
			want["404"] = true
		}
		for code, must := range want {
			listed := op.Responses.Value(code) != nil
			if must && !listed {
				t.Errorf("%s does not list %s", route, code)
			}
		}
		switch {
		case route == auth.EventStream:
			// The one route that also takes ?access_token=.
			if op.Security == nil || len(*op.Security) != 2 || (*op.Security)[1]["accessToken"] == nil {
				t.Errorf("%s security = %v, want bearerAuth or accessToken", route, op.Security)
			}
		case op.Security != nil:
			t.Errorf("%s overrides the global security", route)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		op := doc.Paths.Find(path).Get
		if op.Security == nil || len(*op.Security) != 0 {
			t.Errorf("%s is not marked open (security: [])", path)
		}
	}
}
