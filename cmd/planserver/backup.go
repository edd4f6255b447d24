package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/planserver/planserver/internal/db"
)

// backup writes an online, consistent copy of the database to a new file,
// while a server may be serving it.
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: planserver backup FILE [--db DB]")
		return errUsage
	}
	dest := args[0]
	var cfg config
	if err := parseFlags(flagSet("backup", &cfg, false, stderr), args[1:], getenv); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	if !db.IsPostgres(cfg.DB) {
		if _, err := os.Stat(cfg.DB); err != nil {
			return fmt.Errorf("database %s: %w", cfg.DB, err)
		}
	}
	d, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Backup(ctx, dest); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: backed up to %s\n", cfg.DB, dest)
	return nil
}
