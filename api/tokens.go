package api

// Token roles.
const (
	RoleAdmin  = "admin"
	RoleAgent  = "agent"
	RoleViewer = "viewer"
)

// Token is what is known about a token; never its secret.
type Token struct {
	Name       string  `json:"name"`
	Role       string  `json:"role"`
	SessionID  *string `json:"session_id"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  *string `json:"expires_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
	// CreatedBy is who made the token (an admin token's name or a
	// person's email); empty for tokens made on the host with planserver
	// token create. CreatedByPerson is that person when one signed in.
	CreatedBy       string  `json:"created_by"`
	CreatedByPerson *Person `json:"created_by_person"`
}

// TokenCreate describes a new token (POST /v1/tokens).
type TokenCreate struct {
	Role      string `json:"role" validate:"required"`
	SessionID string `json:"session_id,omitempty"`
	Name      string `json:"name,omitempty"`
	// TTL is a Go duration ("24h"); empty means no expiry.
	TTL string `json:"ttl,omitempty"`
}

// CreatedToken is the one answer that carries a token's secret.
type CreatedToken struct {
	Secret string `json:"token"`
	*Token
}

// TokenList is GET /v1/tokens.
type TokenList struct {
	Tokens []*Token `json:"tokens"`
}
