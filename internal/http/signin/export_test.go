package signin

import "context"

// VerifyIDToken exposes the ID token checks of a login, so tokens minted
// by another issuer or for another audience can be put to them.
func (o *OIDC) VerifyIDToken(raw, nonce string) error {
	_, _, err := o.verify(context.Background(), raw, nonce)
	return err
}
