package api

// Gate is a streamable-HTTP MCP server an admin registered, reached by
// agents through /mcp/gate/{name} behind the plan-mode gate.
type Gate struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// ReadOnlyTools are the upstream's tools the operator declared
	// read-only, beyond those annotated readOnlyHint: true.
	ReadOnlyTools []string `json:"read_only_tools"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
}

// GateWrite is the body of PUT /v1/gates/{name}.
type GateWrite struct {
	URL           string   `json:"url" validate:"required,max=2048"`
	ReadOnlyTools []string `json:"read_only_tools,omitempty" validate:"max=1000,dive,required,max=256"`
}

// GateList is GET /v1/gates.
type GateList struct {
	Gates []Gate `json:"gates"`
}
