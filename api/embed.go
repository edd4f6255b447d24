// Package api embeds the OpenAPI contract so the binary serves exactly the
// document its tests validate against.
package api

import _ "embed"

// Spec is api/openapi.yaml.
//
//go:embed openapi.yaml
var Spec []byte
