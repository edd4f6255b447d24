package auth

import (
	"fmt"
	"strings"
)

// RoleRule is one entry of --oidc-roles: people the matcher matches get
// Role, and a reviewer optionally only on the subtree of SessionID.
//
// The syntax is a comma-separated list of ROLE[SUBTREE]=KIND:VALUE:
//
//	admin=email:lead@example.com
//	reviewer[payments-root]=group:payments
//	viewer=domain:example.com
//
// KIND is email (the whole address), domain (the part after @) or group
// (one of the groups claim's entries). Emails and domains are compared
// without regard to case, groups exactly. The first rule that matches
// decides, so put the narrow rules first; a person no rule matches is not
// let in.
type RoleRule struct {
	Role      Role
	SessionID string
	Kind      string
	Value     string
}

// The matcher kinds of a RoleRule.
const (
	MatchEmail  = "email"
	MatchDomain = "domain"
	MatchGroup  = "group"
)

func (r RoleRule) String() string {
	role := string(r.Role)
	if r.SessionID != "" {
		role += "[" + r.SessionID + "]"
	}
	return role + "=" + r.Kind + ":" + r.Value
}

// ParseRoleRules parses an --oidc-roles value.
func ParseRoleRules(v string) ([]RoleRule, error) {
	var out []RoleRule
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		role, matcher, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("--oidc-roles: %q is not ROLE=KIND:VALUE, e.g. reviewer=group:payments", entry)
		}
		var r RoleRule
		if name, sub, hasSub := strings.Cut(role, "["); hasSub {
			if !strings.HasSuffix(sub, "]") || len(sub) < 2 {
				return nil, fmt.Errorf("--oidc-roles: %q: a subtree is written reviewer[SESSION_ID]", entry)
			}
			role, r.SessionID = name, strings.TrimSuffix(sub, "]")
		}
		parsed, err := ParsePersonRole(role)
		if err != nil {
			return nil, fmt.Errorf("--oidc-roles: %q: %w", entry, err)
		}
		r.Role = parsed
		if r.SessionID != "" && r.Role != Reviewer {
			return nil, fmt.Errorf("--oidc-roles: %q: only a reviewer has a subtree (admins decide everywhere, viewers decide nothing)", entry)
		}
		kind, value, ok := strings.Cut(matcher, ":")
		value = strings.TrimSpace(value)
		if !ok || value == "" {
			return nil, fmt.Errorf("--oidc-roles: %q: the matcher must be email:ADDRESS, domain:DOMAIN or group:NAME", entry)
		}
		switch kind {
		case MatchEmail:
			if !strings.Contains(value, "@") {
				return nil, fmt.Errorf("--oidc-roles: %q: %q is not an email address", entry, value)
			}
		case MatchDomain:
			value = strings.TrimPrefix(value, "@")
			if strings.Contains(value, "@") || !strings.Contains(value, ".") {
				return nil, fmt.Errorf("--oidc-roles: %q: %q is not a domain such as example.com", entry, value)
			}
		case MatchGroup:
		default:
			return nil, fmt.Errorf("--oidc-roles: %q: unknown matcher %q: want email, domain or group", entry, kind)
		}
		r.Kind, r.Value = kind, value
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--oidc-roles is empty: nobody could sign in; map at least one person, e.g. admin=email:you@example.com")
	}
	return out, nil
}

// Claims are what the provider says about a person that the rules read.
type Claims struct {
	Email string
	// EmailVerified is false only when the provider said so; an email the
	// provider has not verified matches no email or domain rule, since
	// anyone could have typed it.
	EmailVerified bool
	Groups        []string
}

// MatchRole returns the first rule that matches c, and false when none
// does: that person is not let in.
func MatchRole(rules []RoleRule, c Claims) (RoleRule, bool) {
	email := strings.ToLower(c.Email)
	_, domain, _ := strings.Cut(email, "@")
	for _, r := range rules {
		switch r.Kind {
		case MatchEmail:
			if c.EmailVerified && email != "" && email == strings.ToLower(r.Value) {
				return r, true
			}
		case MatchDomain:
			if c.EmailVerified && domain != "" && domain == strings.ToLower(r.Value) {
				return r, true
			}
		case MatchGroup:
			for _, g := range c.Groups {
				if g == r.Value {
					return r, true
				}
			}
		}
	}
	return RoleRule{}, false
}
