package shellclass

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Argv returns the words of command when bash would run them with execve
// and nothing else: one simple command of literal words (quotes allowed;
// no expansion, pattern, brace, tilde, redirection, assignment, pipe,
// list or background), whose program is found through PATH (no slash)
// and is neither a bash builtin nor a keyword, nor bash itself. Running
// those words needs no shell, so the sandbox runs them without one: a
// second bash start was a sixth of what plan mode added to `ls -la`.
// bash is left out so that a wrapped line never reads like the bash -c
// form (sandbox.Unwrap tells the two apart by it).
func Argv(command string) ([]string, bool) {
	if readsOtherwise(command) != "" {
		return nil, false
	}
	f, why := parse(command)
	if why != "" || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || st.Disown || len(st.Redirs) > 0 {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	argv := make([]string, 0, len(call.Args))
	for _, a := range call.Args {
		w := evalWord(a)
		if !w.literal || w.glob || w.splits || w.expansion != "" {
			return nil, false
		}
		argv = append(argv, w.val)
	}
	name := argv[0]
	if name == "" || name == "bash" || strings.ContainsRune(name, '/') || shellBuiltins[name] {
		return nil, false
	}
	return argv, true
}

// shellBuiltins are bash's builtins and reserved words (compgen -b,
// compgen -k): run without bash, such a name would find another program
// or none.
var shellBuiltins = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`. : [ alias bg bind break builtin caller cd command compgen complete compopt
		continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs
		kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source
		suspend test times trap true type typeset ulimit umask unalias unset wait
		if then else elif fi case esac for select while until do done in function time { } ! [[ ]] coproc`) {
		m[n] = true
	}
	return m
}()
