package api

// Person is a human signed in through the identity provider (OIDC): the
// subject the provider knows them by, with the email it gave and verified
// (empty when it gave none, or marked it unverified) and the name it gave.
// Records of what a person did carry it beside the actor's display name.
type Person struct {
	Subject string `json:"subject"`
	Email   string `json:"email"`
	Name    string `json:"name"`
}

// DisplayName is how a person is named as an actor (an event's actor, a
// review's decided_by): their email, which planserver records only when
// the provider verified it, else their subject, which the provider
// assigns. Never their name: a person can set that to anything, another
// person's email included.
func (p Person) DisplayName() string {
	if p.Email != "" {
		return p.Email
	}
	return p.Subject
}

// The kinds of caller GET /v1/me reports.
const (
	KindPerson = "person"
	KindToken  = "token"
)

// Me is GET /v1/me: who the caller is. For a token, subject and name are
// the token's name and email is empty; for a person, the provider's
// subject, email and name. SessionID is an agent token's scope or a
// reviewer's subtree. CSRFToken is set for a signed-in person only: every
// state-changing request made with the sign-in cookie sends it back in
// X-CSRF-Token.
type Me struct {
	Kind      string  `json:"kind"`
	Subject   string  `json:"subject"`
	Email     string  `json:"email"`
	Name      string  `json:"name"`
	Role      string  `json:"role"`
	SessionID *string `json:"session_id"`
	CSRFToken *string `json:"csrf_token"`
	// ExpiresAt is when a person's sign-in ends at the latest (the
	// absolute timeout); null for a token.
	ExpiresAt *string `json:"expires_at"`
	// SignInID is a person's sign-in as GET /v1/signins names it; null
	// for a token.
	SignInID *string `json:"signin_id"`
}

// Logout is the answer of POST /auth/logout: where the browser goes next,
// the provider's end_session_endpoint (RP-initiated logout) when it has
// one, else the console.
type Logout struct {
	Redirect string `json:"redirect"`
}
