package main

import (
	"context"
	"fmt"
	"io"
)

// backup writes an online, consistent copy of the database to a new file,
// while a server may be serving it.
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flagSet("backup", &cfg)
	if len(args) > 0 && isHelp(args[0]) {
		printHelp(stdout, fs)
		return errHelp
	}
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return usageError(stderr, fs.Name(), "name the FILE to write the copy to, before any flag")
	}
	dest := args[0]
	if err := parseFlags(fs, args[1:], getenv, stdout, stderr); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	if err := mustExist(cfg.DB); err != nil {
		return err
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
