// Package cliflag holds what planserver's commands share about flags. It
// imports only the standard library: the lean hook binary uses it too.
package cliflag

import "strings"

// DefaultServer is the planserver the commands talk to when neither
// --server nor PLANSERVER_URL names one.
const DefaultServer = "http://127.0.0.1:8080"

// ErrorText rewrites the flag package's errors, which name flags in
// -single-dash form, in the --double-dash form the help uses.
func ErrorText(err error) string {
	msg := err.Error()
	for _, prefix := range []string{"flag provided but not defined: -", "bad flag syntax: "} {
		if name, ok := strings.CutPrefix(msg, prefix); ok {
			return "unknown flag --" + strings.TrimLeft(name, "-")
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value"
	}
	return strings.Replace(msg, " for flag -", " for flag --", 1)
}

// IsHelp reports whether a command-line argument asks for help.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}
