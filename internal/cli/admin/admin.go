// Package admin holds planserver's admin commands, those that work on the
// database directly, with or without a running server: migrate, token,
// backup, copy and gate add|list|remove; and healthcheck, a container's
// probe of a running server. Their settings (--db, --addr and their
// PLANSERVER_* variables; copy's --from and --to have none) are
// serveconfig's, as serve's are; cmd/planserver puts them in the command
// tree.
package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/serveconfig"
)

// commandHelp is the synopsis of each command, printed by --help above
// its flags.
var commandHelp = map[string]string{
	"migrate": `Usage: planserver migrate up|down|status [flags]

  up      apply every pending migration (creates the database if missing)
  down    roll back the newest migration; refused when that would lose
          data or a guarantee
  status  list the migrations and whether each is applied

up and down refuse to run while a planserver serve holds the database.
`,
	"migrate up": `Usage: planserver migrate up [flags]

Apply every pending migration, creating the database if it is missing.
Refused while a planserver serve holds the database.
`,
	"migrate down": `Usage: planserver migrate down [flags]

Roll back the newest applied migration. Refused while a planserver serve
holds the database, and when the rollback would lose data or a guarantee
(the message says which).
`,
	"migrate status": `Usage: planserver migrate status [flags]

List every migration this binary knows and whether the database has it.
The database must exist.
`,
	"token": `Usage:
  planserver token create --role admin|agent|viewer [--session ID] [--name N] [--ttl D] [flags]
  planserver token list [flags]
  planserver token revoke NAME [flags]

Manage bearer tokens directly on the database, with or without a running
server. Run 'planserver token ACTION --help' for an action's flags.
`,
	"token create": `Usage: planserver token create --role admin|agent|viewer [--session ID] [--name N] [--ttl D] [flags]

Create a token and print its secret on stdout, the only time it is shown.
Creates and migrates the database if it is missing.
`,
	"token list": `Usage: planserver token list [flags]

List every token (never a secret), revoked ones included.
`,
	"token revoke": `Usage: planserver token revoke NAME [flags]

Revoke the token called NAME; it stays listed.
`,
	"backup": `Usage: planserver backup FILE [flags]

Write an online, consistent copy of the database to FILE, which must not
exist, while a server may keep serving it.
`,
	"gate add": `Usage: planserver gate add NAME URL [--read-only TOOLS] [flags]

Register (or replace) the streamable-HTTP MCP server at URL as gate NAME:
agents reach it through planserver at /mcp/gate/NAME, behind the plan-mode
gate. Creates and migrates the database if it is missing.
`,
	"gate list": `Usage: planserver gate list [flags]

List the registered gates: name, URL, extra read-only tools, last update.
`,
	"gate remove": `Usage: planserver gate remove NAME [flags]

Remove gate NAME from the registry (DELETE /v1/gates/{name} does the same over HTTP).
`,
	"healthcheck": `Usage: planserver healthcheck [flags]

Ask a running server's GET /healthz: exit 0 when it answers 200, 1
otherwise. For a container HEALTHCHECK, where there is no curl.
`,
}

// openAndMigrate opens the database for a command that works beside a
// running server (token) and applies pending migrations first, refusing a
// schema newer than this binary. Only a migration takes the database's
// lock, so at the same schema version it never waits on a server.
func openAndMigrate(ctx context.Context, cfg serveconfig.Config, holder string) (*db.DB, error) {
	store, err := cfg.OpenDB(ctx)
	if err != nil {
		return nil, err
	}
	current, known, err := store.SchemaVersions(ctx)
	if err == nil && current < known {
		var lock *db.FileLock
		if lock, err = db.Lock(cfg.DB, holder); err == nil {
			_, _, err = store.MigrateUp(ctx, nil)
			lock.Release()
		}
	} else if err == nil && current > known {
		_, _, err = store.MigrateUp(ctx, nil) // refuses, saying why
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// mustExist refuses a database path that does not exist, for commands
// that read one and must not leave an empty file behind.
func mustExist(path string) error {
	if !db.IsFile(path) {
		return nil // a server, not a file: opening it says what is wrong
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("database %s does not exist (planserver serve or migrate up creates it)", path)
	} else if err != nil {
		return db.ExplainOpenError(path, err)
	}
	return nil
}
