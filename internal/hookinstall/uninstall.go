package hookinstall

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Uninstall takes out of host o.Host's settings exactly what install added:
// its hooks (recognized by their command), the MCP server it wrote (while
// it is still what it wrote), the files holding the token, the record of
// the install, and the copied binaries once no other installation uses
// them. The user's own hooks and MCP servers stay.
func Uninstall(o Options) error {
	o.defaults()
	prev, err := readManifest(o.manifestPath())
	if err != nil {
		return err
	}
	if prev == nil {
		fmt.Fprintln(o.Out, "no record of an install here: taking out planserver's hooks only (an MCP server is left as it is)")
	}
	m := Manifest{}
	changes, notes, err := o.settingsChanges(false, command{host: o.Host}, nil, prev, &m)
	if err != nil {
		return err
	}
	if o.DryRun {
		printChanges(o.Out, changes, "uninstall")
		for _, n := range notes {
			fmt.Fprintln(o.Out, n)
		}
		if prev != nil {
			fmt.Fprintf(o.Out, "would remove %s\n", o.manifestPath())
		}
		fmt.Fprintln(o.Out, "dry run: nothing was written")
		return nil
	}
	if len(changes) == 0 {
		fmt.Fprintf(o.Out, "%s: nothing to change\n", o.paths().settings)
	}
	if err := applyChanges(o.Out, changes); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(o.Out, n)
	}
	if prev == nil {
		return nil
	}
	for _, f := range []string{prev.TokenFile, prev.HeadersFile, o.manifestPath()} {
		if f != "" {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	// The binaries go when no other installation's record names their
	// folder.
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(o.manifestPath()), "*.json"))
	for _, other := range others {
		if om, err := readManifest(other); err == nil && om != nil && filepath.Clean(om.BinDir) == filepath.Clean(prev.BinDir) {
			fmt.Fprintf(o.Out, "kept the binaries in %s: %s uses them\n", prev.BinDir, strings.TrimSuffix(filepath.Base(other), ".json"))
			return nil
		}
	}
	for _, name := range prev.Binaries {
		path := filepath.Join(prev.BinDir, name)
		if err := os.Remove(path); err == nil {
			fmt.Fprintf(o.Out, "removed %s\n", path)
		}
	}
	_ = os.Remove(prev.BinDir) // only when empty
	return nil
}
