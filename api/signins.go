package api

// SignIn is a person's sign-in through the identity provider, as an admin
// sees it (GET /v1/signins): never its cookie or any hash of it.
type SignIn struct {
	// ID names the sign-in to the admin API, planserver signin and the
	// console: si_ and 22 base64url characters.
	ID string `json:"id"`
	// Subject, Email and Name are the person as the provider said at
	// login; Email only when the provider verified it.
	Subject string `json:"subject"`
	Email   string `json:"email"`
	Name    string `json:"name"`
	// Groups are the provider's groups claim at login, which group rules
	// match.
	Groups []string `json:"groups"`
	// Role is what --oidc-roles, as this server has them now, give the
	// person: it is matched again on every request. Null when no rule
	// does any more: every request with the sign-in is then refused.
	Role *string `json:"role"`
	// SessionID is a reviewer's subtree under those rules; null for every
	// session (and for other roles).
	SessionID *string `json:"session_id"`
	// RoleAtSignIn is the role the rules gave at login.
	RoleAtSignIn string `json:"role_at_sign_in"`
	CreatedAt    string `json:"created_at"`
	// LastSeenAt is the last request made with it, recorded at most once
	// a minute.
	LastSeenAt string `json:"last_seen_at"`
	// ExpiresAt is the absolute timeout; IdleExpiresAt when it ends
	// without another request.
	ExpiresAt     string `json:"expires_at"`
	IdleExpiresAt string `json:"idle_expires_at"`
}

// SignInList is GET /v1/signins: the live sign-ins, oldest first.
type SignInList struct {
	SignIns       []SignIn `json:"signins"`
	NextPageToken string   `json:"next_page_token"`
}

// SignInsEnded is DELETE /v1/signins?subject=: the sign-ins of one person
// that were ended (none when they had none).
type SignInsEnded struct {
	SignIns []SignIn `json:"signins"`
}
