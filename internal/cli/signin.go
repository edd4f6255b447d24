package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/spf13/pflag"
)

// The signin commands list and end the sign-ins of people (OIDC) on a
// running server, through the client package (admin tokens only): the
// way to end someone's access at once, on every replica.

var signinListCmd = &cliCommand{
	name: "signin list", args: "", minArgs: 0, maxArgs: 0,
	summary: "list people's live sign-ins and the role the rules give them now",
	help: `List the live sign-ins (not signed out, ended or timed out), oldest
first. ROLE is what --oidc-roles, as the server runs with them now, give the
person: the rules are matched again on every request, and "-" means no rule
lets them in any more (their requests are refused).
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var subject string
		fs.StringVar(&subject, "subject", "", "only this person's sign-ins (the provider's `subject`)")
		return func(x *cli, _ []string) error {
			all := []api.SignIn{}
			token := ""
			for {
				page, err := x.c.ListSignIns(x.ctx, subject, 1000, token)
				if err != nil {
					return err
				}
				all = append(all, page.SignIns...)
				if token = page.NextPageToken; token == "" {
					break
				}
			}
			return x.out(all, func(w io.Writer) {
				rows := make([][]string, len(all))
				for i, g := range all {
					rows[i] = []string{g.ID, oneLine(g.Subject, 40), dash(g.Email), roleNow(g), g.CreatedAt, g.LastSeenAt, g.ExpiresAt}
				}
				table(w, "ID\tSUBJECT\tEMAIL\tROLE\tSIGNED IN\tLAST SEEN\tEXPIRES", rows)
			})
		}
	},
}

var signinShowCmd = &cliCommand{
	name: "signin show", args: "ID", minArgs: 1, maxArgs: 1,
	summary: "show one sign-in",
	help:    "Show a live sign-in: the person, their groups, the role the rules give them now, its timeouts.\n",
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		return func(x *cli, args []string) error {
			g, err := x.c.GetSignIn(x.ctx, args[0])
			if err != nil {
				return err
			}
			return x.out(g, func(w io.Writer) {
				fmt.Fprintf(w, "id:         %s\nsubject:    %s\nemail:      %s\nname:       %s\ngroups:     %s\n",
					g.ID, g.Subject, dash(g.Email), dash(g.Name), dash(strings.Join(g.Groups, ", ")))
				fmt.Fprintf(w, "role:       %s (at sign-in: %s)\n", roleNow(*g), g.RoleAtSignIn)
				if g.SessionID != nil {
					fmt.Fprintf(w, "subtree:    %s\n", *g.SessionID)
				}
				fmt.Fprintf(w, "signed in:  %s\nlast seen:  %s\nidle until: %s\nexpires:    %s\n",
					g.CreatedAt, g.LastSeenAt, g.IdleExpiresAt, g.ExpiresAt)
			})
		}
	},
}

var signinRevokeCmd = &cliCommand{
	name: "signin revoke", args: "[ID]", minArgs: 0, maxArgs: 1,
	summary: "end a sign-in, or all of one person's, at once",
	help: `End the sign-in ID, or with --subject every sign-in of that person, at
once and on every replica: their next request is refused, their event
streams and MCP calls stop. They may sign in again while --oidc-roles and
the provider let them; to end their access for good, change the rules (and
restart) or disable them at the provider too.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var subject string
		fs.StringVar(&subject, "subject", "", "end every sign-in of this person (the provider's `subject`)")
		return func(x *cli, args []string) error {
			switch {
			case len(args) == 1 && subject != "":
				return x.usage("name a sign-in ID or --subject, not both")
			case len(args) == 0 && subject == "":
				return x.usage("name the sign-in ID to end, or --subject SUBJECT to end all of one person's")
			case len(args) == 1:
				if err := x.c.RevokeSignIn(x.ctx, args[0]); err != nil {
					return err
				}
				return x.out(map[string]string{"ended": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "ended sign-in %s\n", args[0]) })
			}
			ended, err := x.c.RevokeSignInsOf(x.ctx, subject)
			if err != nil {
				return err
			}
			return x.out(ended.SignIns, func(w io.Writer) {
				if len(ended.SignIns) == 0 {
					fmt.Fprintf(w, "%s had no live sign-in\n", subject)
				}
				for _, g := range ended.SignIns {
					fmt.Fprintf(w, "ended sign-in %s of %s\n", g.ID, subject)
				}
			})
		}
	},
}

// roleNow is a sign-in's role under the rules in force, "-" for none.
func roleNow(g api.SignIn) string {
	if g.Role == nil {
		return "-"
	}
	if g.SessionID != nil {
		return *g.Role + "[" + *g.SessionID + "]"
	}
	return *g.Role
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
