package signin_test

import (
	"context"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/oidctest"
)

func newIDP(t *testing.T) *oidctest.Provider {
	t.Helper()
	p, err := oidctest.Start(oidctest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestIDTokenChecks: an ID token counts only when it is the provider's,
// for this client, unexpired, untampered and for this login (its nonce);
// one attack of TestSignInAttacks (internal/http), put to the checks
// directly, since no flow through the provider mints such tokens.
func TestIDTokenChecks(t *testing.T) {
	idp := newIDP(t)
	rules, err := auth.ParseRoleRules("viewer=domain:example.com")
	if err != nil {
		t.Fatal(err)
	}
	o, err := signin.NewOIDC(context.Background(), signin.Settings{Issuer: idp.Issuer, ClientID: idp.ClientID,
		ClientSecret: idp.ClientSecret, RedirectURL: "http://127.0.0.1:1" + signin.CallbackPath, Roles: rules})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("another issuer or audience", func(t *testing.T) {
		nonce := auth.NewNonce()
		mint := func(p *oidctest.Provider, audience string, ttl time.Duration) string {
			c := oidctest.TokenClaims{Subject: "u-jane", Email: "jane@example.com", Audience: audience, Nonce: nonce}
			if ttl != 0 {
				c.Expiry = time.Now().Add(ttl)
			}
			raw, err := p.IDToken(c)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		if err := o.VerifyIDToken(mint(idp, "", 0), nonce); err != nil {
			t.Fatalf("the provider's own token: %v", err)
		}
		for name, raw := range map[string]string{
			"another issuer":   mint(newIDP(t), idp.ClientID, 0),
			"another audience": mint(idp, "someone-else", 0),
			"expired":          mint(idp, "", -time.Minute),
			"tampered":         mint(idp, "", 0) + "x",
		} {
			if err := o.VerifyIDToken(raw, nonce); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if err := o.VerifyIDToken(mint(idp, "", 0), auth.NewNonce()); err == nil {
			t.Error("another login's nonce: accepted")
		}
	})

}
