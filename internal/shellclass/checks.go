package shellclass

import (
	"fmt"
	"strings"
)

// longIs reports whether the long option key (without =value) names full,
// written out or abbreviated as getopt_long accepts.
func longIs(key, full string) bool {
	return key == full || (len(key) > 3 && strings.HasPrefix(full, key))
}

func unknownFlag(name string, a arg) string {
	return fmt.Sprintf("`%s` gets an argument from an expansion or pattern (%s) that could be a writing flag", name, a.src)
}

func gitRule() *rule {
	logLike := func() *rule { return &rule{deny: []flag{{"--output", whyWrites}}} }
	harmless := func() *rule { return &rule{harmless: true} }
	subs := map[string]*rule{
		"grep": {deny: []flag{{"-O", whyRuns}, {"--open-files-in-pager", whyRuns}}},
		"reflog": {deny: []flag{{"--output", whyWrites}}, check: func(_ *classifier, name string, args []arg) string {
			for _, a := range args {
				if a.known && !strings.HasPrefix(a.val, "-") {
					switch a.val {
					case "expire", "delete", "drop", "write":
						return fmt.Sprintf("`%s %s` rewrites the reflog", name, a.val)
					}
					return ""
				}
			}
			return ""
		}},
		"branch": {deny: gitFlags("-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
			"-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "-t", "--track", "--no-track",
			"--create-reflog", "--recurse-submodules"), check: gitListing("creates a branch")},
		"tag": {deny: gitFlags("-a", "--annotate", "-s", "--sign", "-u", "--local-user", "-f", "--force", "-d", "--delete",
			"-m", "--message", "-F", "--file", "-e", "--edit", "--cleanup", "--create-reflog", "--trailer"),
			check: gitListing("creates a tag")},
		"remote":   {check: gitRemote},
		"config":   {deny: gitFlags("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit"), check: gitConfig},
		"stash":    {sub: map[string]*rule{"list": logLike(), "show": logLike()}, subRequired: true},
		"worktree": {sub: map[string]*rule{"list": harmless()}, subRequired: true},
		"notes":    {sub: map[string]*rule{"list": harmless(), "show": harmless()}, subRequired: true},
	}
	for _, s := range []string{"log", "show", "diff", "whatchanged", "diff-tree", "diff-index", "diff-files", "range-diff", "rev-list"} {
		subs[s] = logLike()
	}
	for _, s := range []string{"status", "blame", "annotate", "ls-files", "ls-tree", "cat-file", "rev-parse", "describe",
		"shortlog", "show-ref", "for-each-ref", "merge-base", "name-rev", "count-objects", "var", "version",
		"check-ignore", "check-attr", "check-ref-format", "cherry", "show-branch", "verify-commit", "verify-tag"} {
		subs[s] = harmless()
	}
	never := map[string]string{}
	for _, s := range gitNetwork {
		never[s] = whyNetwork
	}
	return &rule{sub: subs, never: never, pre: gitGlobal}
}

func gitFlags(names ...string) []flag {
	out := make([]flag, len(names))
	for i, n := range names {
		out[i] = flag{n, "changes the repository"}
	}
	return out
}

// gitGlobal consumes git's options before the subcommand. -c and
// --config-env set configuration, which can name a program for git to
// run (core.pager, diff.external, core.fsmonitor).
func gitGlobal(_ *classifier, name string, args []arg) ([]arg, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.known {
			if a.flagLike {
				return nil, unknownFlag(name, a)
			}
			return args[i:], ""
		}
		v := a.val
		if !strings.HasPrefix(v, "-") {
			return args[i:], ""
		}
		key, _, hasValue := strings.Cut(v, "=")
		switch {
		case strings.HasPrefix(v, "-c") || key == "--config-env":
			return nil, fmt.Sprintf("`%s %s` sets configuration, which can make git run a program", name, key)
		case key == "--exec-path" && hasValue:
			return nil, fmt.Sprintf("`%s --exec-path=` runs git's commands from another directory", name)
		case v == "-C" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" || v == "--super-prefix" || v == "--attr-source":
			i++
		case hasValue && (key == "--git-dir" || key == "--work-tree" || key == "--namespace" || key == "--super-prefix" ||
			key == "--list-cmds" || key == "--attr-source"):
		case v == "--no-pager" || v == "-P" || v == "-p" || v == "--paginate" || v == "--bare" || v == "--no-replace-objects" ||
			v == "--literal-pathspecs" || v == "--glob-pathspecs" || v == "--noglob-pathspecs" || v == "--icase-pathspecs" ||
			v == "--no-optional-locks" || v == "--no-lazy-fetch" || v == "--no-advice" || v == "--exec-path" ||
			v == "--version" || v == "-v" || v == "--help" || v == "-h" || v == "--html-path" || v == "--man-path" || v == "--info-path":
		default:
			return nil, fmt.Sprintf("`%s %s` is an option the read-only table does not know", name, v)
		}
	}
	return nil, ""
}

// gitListing allows git branch and git tag only when they list: an
// operand without -l/--list (or tag's -v/--verify) names something to create.
func gitListing(creates string) func(*classifier, string, []arg) string {
	valued := map[string]bool{"--contains": true, "--no-contains": true, "--merged": true, "--no-merged": true,
		"--points-at": true, "--sort": true, "--format": true}
	return func(_ *classifier, name string, args []arg) string {
		listing := false
		var operand string
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !a.known {
				if operand == "" {
					operand = a.src
				}
				continue
			}
			switch v := a.val; {
			case v == "-l" || v == "--list" || v == "-v" || v == "--verify" || v == "--show-current":
				listing = true
			case valued[v]:
				i++
			case v == "--":
			case strings.HasPrefix(v, "-"):
				if !strings.HasPrefix(v, "--") && strings.ContainsAny(v[1:], "l") {
					listing = true
				}
			default:
				if operand == "" {
					operand = v
				}
			}
		}
		if operand != "" && !listing {
			return fmt.Sprintf("`%s %s` %s", name, operand, creates)
		}
		return ""
	}
}

func gitRemote(_ *classifier, name string, args []arg) string {
	var ops []string
	noQuery := false
	for _, a := range args {
		if !a.known {
			if a.flagLike || len(ops) == 0 {
				return unknownFlag(name, a)
			}
			continue
		}
		switch {
		case a.val == "-n":
			noQuery = true
		case strings.HasPrefix(a.val, "-"):
		default:
			ops = append(ops, a.val)
		}
	}
	if len(ops) == 0 {
		return ""
	}
	switch ops[0] {
	case "get-url":
		return ""
	case "show":
		if noQuery {
			return ""
		}
		return fmt.Sprintf("`%s show` without -n %s", name, whyNetwork)
	case "update", "prune":
		return fmt.Sprintf("`%s %s` %s", name, ops[0], whyNetwork)
	}
	return fmt.Sprintf("`%s %s` changes the repository's configuration", name, ops[0])
}

func gitConfig(_ *classifier, name string, args []arg) string {
	for _, a := range args {
		if !a.known {
			continue
		}
		v, _, _ := strings.Cut(a.val, "=")
		switch v {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list":
			return ""
		}
		if !strings.HasPrefix(v, "-") {
			if v == "get" || v == "list" {
				return ""
			}
			break
		}
	}
	return fmt.Sprintf("`%s` without --get or --list (or get, list) sets a value", name)
}

// checkSed finds sed's scripts (-e, --expression, or the first operand)
// and refuses -i, -f and any script with a w, W or e command, or an s
// command with the w or e flag.
func checkSed(_ *classifier, name string, args []arg) string {
	var scripts, operands []arg
	endOpts := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.known {
			if a.flagLike && !endOpts {
				return unknownFlag(name, a)
			}
			operands = append(operands, a)
			continue
		}
		v := a.val
		if endOpts || v == "-" || !strings.HasPrefix(v, "-") {
			operands = append(operands, a)
			continue
		}
		if v == "--" {
			endOpts = true
			continue
		}
		if strings.HasPrefix(v, "--") {
			key, val, hasVal := strings.Cut(v, "=")
			switch {
			case longIs(key, "--in-place"):
				return fmt.Sprintf("`%s --in-place` edits files", name)
			case longIs(key, "--file"):
				return fmt.Sprintf("`%s --file` runs a script the classifier cannot see", name)
			case longIs(key, "--expression"):
				if hasVal {
					scripts = append(scripts, arg{val: val, known: true})
				} else if i+1 < len(args) {
					i++
					scripts = append(scripts, args[i])
				}
			case longIs(key, "--line-length"):
				if !hasVal {
					i++
				}
			case key == "--posix" || key == "--debug" || key == "--sandbox" || longIs(key, "--null-data") ||
				longIs(key, "--zero-terminated") || longIs(key, "--separate") || longIs(key, "--unbuffered") ||
				longIs(key, "--regexp-extended") || longIs(key, "--quiet") || longIs(key, "--silent") ||
				longIs(key, "--follow-symlinks") || longIs(key, "--binary") || key == "--help" || key == "--version":
			default:
				return fmt.Sprintf("`%s %s` is an option the read-only table does not know", name, key)
			}
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'i':
				return fmt.Sprintf("`%s -i` edits files in place", name)
			case 'f':
				return fmt.Sprintf("`%s -f` runs a script file the classifier cannot see", name)
			case 'e', 'l':
				rest := v[j+1:]
				if rest == "" && i+1 < len(args) {
					i++
					rest, a = "", args[i]
				} else {
					a = arg{val: rest, known: true}
				}
				if v[j] == 'e' {
					scripts = append(scripts, a)
				}
				break cluster
			case 'n', 'r', 'E', 's', 'u', 'z':
			default:
				return fmt.Sprintf("`%s -%c` is an option the read-only table does not know", name, v[j])
			}
		}
	}
	if len(scripts) == 0 {
		if len(operands) == 0 {
			return ""
		}
		scripts = operands[:1]
	}
	for _, s := range scripts {
		if !s.known {
			return fmt.Sprintf("`%s` with a script from an expansion (%s) cannot be proven read-only", name, s.src)
		}
		if r := sedScript(s.val); r != "" {
			return fmt.Sprintf("`%s` script %s", name, r)
		}
	}
	return ""
}

// sedScript returns why a sed script is not read-only, or "". It reads
// GNU sed's syntax; anything it does not recognise is not read-only. It
// ends a regular expression at the first unescaped delimiter, never later
// than sed does, so a command that sed sees is never taken for part of a
// regular expression.
func sedScript(s string) string {
	i, n := 0, len(s)
	skipTo := func(stop string) {
		for i < n && strings.IndexByte(stop, s[i]) < 0 {
			i++
		}
	}
	// delimited skips a delimited part (regex or replacement) starting
	// after its opening delimiter d, and reports whether it ended.
	delimited := func(d byte) bool {
		for i < n {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			}
			i++
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && s[i] >= '0' && s[i] <= '9':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < n && s[i] == '$':
			i++
		case i < n && (s[i] == '/' || s[i] == '\\'):
			d := byte('/')
			if s[i] == '\\' {
				if i+1 >= n {
					return false
				}
				d = s[i+1]
				i++
			}
			i++
			if !delimited(d) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for i < n {
		switch s[i] {
		case ' ', '\t', '\n', ';':
			i++
			continue
		case '#':
			skipTo("\n")
			continue
		}
		if !address() {
			return "has an address the classifier cannot read"
		}
		if i < n && s[i] == ',' {
			i++
			if i < n && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return "has an address the classifier cannot read"
			}
		}
		for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '!') {
			i++
		}
		if i >= n {
			return "ends after an address"
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			for i < n && (s[i] == ' ' || s[i] >= '0' && s[i] <= '9') {
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			skipTo(";\n")
		case 'a', 'i', 'c':
			// Text to the end of the line; a backslash-newline continues it.
			for i < n && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case 'r', 'R':
			skipTo("\n")
		case 'w', 'W':
			return fmt.Sprintf("writes a file with the %c command", cmd)
		case 'e':
			return "runs a command with the e command"
		case 's', 'y':
			if i >= n || s[i] == '\n' || s[i] == '\\' {
				return fmt.Sprintf("has an %c command the classifier cannot read", cmd)
			}
			d := s[i]
			i++
			// The pattern, then the replacement (or y's two sets).
			for part := 0; part < 2; part++ {
				if !delimited(d) {
					return fmt.Sprintf("has an unterminated %c command", cmd)
				}
			}
			if cmd == 'y' {
				break
			}
			for i < n && !strings.ContainsRune(" \t\n;}#", rune(s[i])) {
				switch c := s[i]; {
				case c == 'w':
					return "writes a file with the s command's w flag"
				case c == 'e':
					return "runs a command with the s command's e flag"
				case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M' || c >= '0' && c <= '9':
				default:
					return fmt.Sprintf("has an s flag %q the classifier does not know", c)
				}
				i++
			}
		default:
			return fmt.Sprintf("has a command %q the classifier does not know", cmd)
		}
	}
	return ""
}

// checkAwk finds awk's program and refuses options that load or write
// files (-f, -i, -l, -E, -o, -p, -d, -D, -W) and a program that writes
// (print > file), pipes (print | cmd, cmd | getline), calls system() or
// uses gawk's @ directives.
func checkAwk(_ *classifier, name string, args []arg) string {
	var prog *arg
	valued := map[byte]bool{'F': true, 'v': true, 'e': true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.known {
			if a.flagLike {
				return unknownFlag(name, a)
			}
			prog = &args[i]
			break
		}
		v := a.val
		if v == "--" {
			if i+1 < len(args) {
				prog = &args[i+1]
			}
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			prog = &args[i]
			break
		}
		if strings.HasPrefix(v, "--") {
			key, val, hasVal := strings.Cut(v, "=")
			switch {
			case longIs(key, "--source"):
				if !hasVal && i+1 < len(args) {
					i++
					a = args[i]
				} else {
					a = arg{val: val, known: true}
				}
				if r := awkScript(name, a); r != "" {
					return r
				}
				prog = &arg{known: true} // the program is given: operands are files
			case longIs(key, "--field-separator") || longIs(key, "--assign"):
				if !hasVal {
					i++
				}
			case key == "--sandbox" || key == "--posix" || key == "--traditional" || key == "--lint" || key == "--characters-as-bytes" ||
				key == "--re-interval" || key == "--non-decimal-data" || key == "--bignum" || key == "--use-lc-numeric" ||
				key == "--optimize" || key == "--no-optimize" || key == "--help" || key == "--version" || key == "--copyright":
			default:
				return fmt.Sprintf("`%s %s` is an option that can load, run or write files", name, key)
			}
			if prog != nil {
				break
			}
			continue
		}
		switch c := v[1]; {
		case valued[c]:
			if len(v) == 2 {
				i++
			}
			if c == 'e' {
				src := arg{val: v[2:], known: true}
				if len(v) == 2 && i < len(args) {
					src = args[i]
				}
				if r := awkScript(name, src); r != "" {
					return r
				}
				prog = &arg{known: true}
			}
		case strings.IndexByte("bcCgLMnNOPrsStV", c) >= 0 && len(v) == 2:
		default:
			return fmt.Sprintf("`%s %s` is an option that can load, run or write files", name, v)
		}
	}
	if prog == nil {
		return ""
	}
	return awkScript(name, *prog)
}

func awkScript(name string, a arg) string {
	if !a.known {
		return fmt.Sprintf("`%s` with a program from an expansion (%s) cannot be proven read-only", name, a.src)
	}
	if r := awkProgram(a.val); r != "" {
		return fmt.Sprintf("`%s` program %s", name, r)
	}
	return ""
}

// awkProgram returns why an awk program is not read-only, or "". It
// tokenises strings, regular expressions and comments so that their
// contents are not mistaken for code, and tracks print statements so that
// a > inside one at its own parenthesis depth is a redirection (awk needs
// parentheses for a comparison there).
func awkProgram(s string) string {
	i, n := 0, len(s)
	operand := false // the last token was an operand: / divides
	inPrint, printDepth, depth := false, 0, 0
	for i < n {
		c := s[i]
		switch {
		case c == '#':
			for i < n && s[i] != '\n' {
				i++
			}
			continue
		case c == '\\' && i+1 < n && s[i+1] == '\n':
			i += 2
			continue
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '\n' || c == ';' || c == '{' || c == '}':
			if depth == printDepth {
				inPrint = false
			}
			operand = false
			i++
			continue
		case c == '"':
			start := i
			i++
			for i < n && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= n {
				return "has an unterminated string"
			}
			i++
			_ = start
			operand = true
			continue
		case c == '/' && !operand:
			i++
			for i < n && s[i] != '/' {
				if s[i] == '\\' {
					i++
				} else if s[i] == '\n' {
					return "has an unterminated regular expression"
				}
				i++
			}
			i++
			operand = true
			continue
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			start := i
			for i < n && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
				i++
			}
			switch word := s[start:i]; word {
			case "system":
				return "calls system(), which runs a command"
			case "print", "printf":
				inPrint, printDepth = true, depth
				operand = false
			case "getline", "in", "return", "if", "while", "for", "do", "else", "delete", "exit", "next", "nextfile":
				operand = false
			default:
				operand = true
			}
			continue
		case c >= '0' && c <= '9' || c == '.':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == 'x' || s[i] >= 'a' && s[i] <= 'f') {
				i++
			}
			operand = true
			continue
		case c == '$':
			i++
			operand = false
			continue
		case c == '@':
			return "uses an @ directive (gawk loads code with @load and @include)"
		case c == '|':
			if i+1 < n && s[i+1] == '|' {
				i += 2
				operand = false
				continue
			}
			return "pipes to or from a command"
		case c == '(' || c == '[':
			depth++
			operand = false
		case c == ')' || c == ']':
			depth--
			operand = true
		case c == '>':
			if inPrint && depth == printDepth {
				i++
				if i < n && s[i] == '>' {
					i++
				}
				for i < n && (s[i] == ' ' || s[i] == '\t') {
					i++
				}
				for _, sink := range []string{`"/dev/stdout"`, `"/dev/stderr"`, `"/dev/null"`, `"-"`} {
					if strings.HasPrefix(s[i:], sink) {
						i += len(sink)
						operand = true
						goto next
					}
				}
				return "writes a file with print >"
			}
			operand = false
		default:
			operand = false
		}
		i++
	next:
	}
	return ""
}

// checkDD refuses of= (and operands it cannot read).
func checkDD(_ *classifier, name string, args []arg) string {
	for _, a := range args {
		v := a.val
		if !a.known {
			v = a.prefix
			if v == "" || a.split {
				return fmt.Sprintf("`%s` gets an operand from an expansion (%s) that could be of=", name, a.src)
			}
		}
		if strings.HasPrefix(v, "of=") || (!a.known && strings.HasPrefix("of=", v)) {
			return fmt.Sprintf("`%s of=` writes a file", name)
		}
	}
	return ""
}

// operandLimit refuses a second operand: uniq IN OUT and xxd IN OUT write OUT.
func operandLimit(name string, valued []string) func(*classifier, string, []arg) string {
	takes := map[string]bool{}
	for _, v := range valued {
		takes[v] = true
	}
	return func(_ *classifier, _ string, args []arg) string {
		operands, endOpts := 0, false
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case !a.known:
				if a.flagLike || a.split {
					return fmt.Sprintf("`%s` gets an argument from an expansion (%s) that could name a file to write", name, a.src)
				}
				operands++
			case !endOpts && a.val == "--":
				endOpts = true
			case !endOpts && takes[a.val]:
				i++
			case !endOpts && strings.HasPrefix(a.val, "-") && a.val != "-":
			default:
				operands++
			}
		}
		if operands > 1 {
			return fmt.Sprintf("`%s` with a second file name writes that file", name)
		}
		return ""
	}
}

func checkHostname(_ *classifier, name string, args []arg) string {
	for _, a := range args {
		if !a.known || !strings.HasPrefix(a.val, "-") {
			return fmt.Sprintf("`%s NAME` sets the host name", name)
		}
	}
	return ""
}

func checkDate(_ *classifier, name string, args []arg) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if !a.known {
			v = a.prefix
		}
		switch {
		case a.known && (v == "-d" || v == "--date" || v == "-f" || v == "--file" || v == "-r" || v == "--reference"):
			i++
		case strings.HasPrefix(v, "-"):
		case strings.HasPrefix(v, "+") && !a.split:
		default:
			return fmt.Sprintf("`%s` with an operand other than +FORMAT sets the clock", name)
		}
	}
	return ""
}

// checkPrintf refuses -v: printf -v 'a[$(cmd)]' runs cmd.
func checkPrintf(_ *classifier, name string, args []arg) string {
	if len(args) == 0 {
		return ""
	}
	a := args[0]
	if a.known && a.val == "--" {
		return ""
	}
	if !a.known && a.flagLike {
		return fmt.Sprintf("`%s` with a format from an expansion (%s) could be -v, which assigns a variable", name, a.src)
	}
	if a.known && strings.HasPrefix(a.val, "-v") {
		return fmt.Sprintf("`%s -v` assigns a variable named by its argument, which can run commands", name)
	}
	return ""
}

// checkTest refuses -v and -R (a subscript in the name runs commands)
// and unknown words where they could become one of them.
func checkTest(_ *classifier, name string, args []arg) string {
	if name == "[" && len(args) > 0 && args[len(args)-1].known && args[len(args)-1].val == "]" {
		args = args[:len(args)-1]
	}
	for _, a := range args {
		if a.known && (a.val == "-v" || a.val == "-R") {
			return fmt.Sprintf("`%s %s` evaluates a subscript, which can run commands", name, a.val)
		}
		if a.split {
			return fmt.Sprintf("the unquoted expansion %s can change what `%s` tests (it could become -v)", a.src, name)
		}
	}
	risky := func(i int) bool { return i < len(args) && !args[i].known && args[i].flagLike }
	switch n := len(args); {
	case n == 2 && risky(0), n == 3 && risky(1):
		return fmt.Sprintf("`%s` gets an operator from an expansion, which could be -v", name)
	case n >= 4:
		for i := range args {
			if risky(i) {
				return fmt.Sprintf("`%s` gets an operator from an expansion, which could be -v", name)
			}
		}
	}
	return ""
}

// checkRead allows read into plain variables the table lets commands set.
func checkRead(c *classifier, name string, args []arg) string {
	valued := "adinNptu"
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.known {
			return fmt.Sprintf("`%s` into a variable named by an expansion (%s) cannot be proven read-only", name, a.src)
		}
		v := a.val
		if strings.HasPrefix(v, "-") && len(v) > 1 {
			for j := 1; j < len(v); j++ {
				if strings.IndexByte(valued, v[j]) >= 0 {
					if v[j] == 'a' {
						target := v[j+1:]
						if target == "" && i+1 < len(args) {
							i++
							if !args[i].known {
								return fmt.Sprintf("`%s -a` into an array named by an expansion cannot be proven read-only", name)
							}
							target = args[i].val
						}
						if r := readTarget(c, name, target); r != "" {
							return r
						}
					} else if j == len(v)-1 {
						i++
					}
					break
				}
				if strings.IndexByte("rseE", v[j]) < 0 {
					return fmt.Sprintf("`%s -%c` is an option the read-only table does not know", name, v[j])
				}
			}
			continue
		}
		if r := readTarget(c, name, v); r != "" {
			return r
		}
	}
	return ""
}

func readTarget(c *classifier, name, v string) string {
	if !validName(v) {
		return fmt.Sprintf("`%s %s` does not name a plain variable, so it cannot be proven read-only", name, v)
	}
	return c.assignName(v)
}

// checkXargs judges the command xargs runs, with the input it reads as
// arguments the classifier cannot see (including wherever -I's
// replacement string stands).
func checkXargs(c *classifier, name string, args []arg) string {
	valued := "adEILnPs"
	replace := ""
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		if !a.known {
			if a.flagLike {
				return unknownFlag(name, a)
			}
			break
		}
		v := a.val
		switch {
		case v == "--":
			i++
			break options
		case !strings.HasPrefix(v, "-") || v == "-":
			break options
		case strings.HasPrefix(v, "--"):
			key, val, hasVal := strings.Cut(v, "=")
			switch {
			case longIs(key, "--process-slot-var"):
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i].val
				}
				if r := c.assignName(val); r != "" {
					return r
				}
			case longIs(key, "--replace"):
				replace = "{}"
				if hasVal {
					replace = val
				}
			case longIs(key, "--arg-file") || longIs(key, "--delimiter") || longIs(key, "--eof") || longIs(key, "--max-lines") ||
				longIs(key, "--max-args") || longIs(key, "--max-procs") || longIs(key, "--max-chars"):
				if !hasVal {
					i++
				}
			case longIs(key, "--null") || longIs(key, "--no-run-if-empty") || longIs(key, "--verbose") || longIs(key, "--interactive") ||
				longIs(key, "--exit") || longIs(key, "--open-tty") || longIs(key, "--show-limits") || key == "--help" || key == "--version":
			default:
				return fmt.Sprintf("`%s %s` is an option the read-only table does not know", name, key)
			}
		default:
			for j := 1; j < len(v); j++ {
				ch := v[j]
				if strings.IndexByte(valued, ch) >= 0 {
					val := v[j+1:]
					if val == "" && i+1 < len(args) {
						i++
						val = args[i].val
					}
					if ch == 'I' {
						replace = val
					}
					break
				}
				if ch == 'i' || ch == 'e' || ch == 'l' {
					if ch == 'i' {
						replace = "{}"
						if j+1 < len(v) {
							replace = v[j+1:]
						}
					}
					break
				}
				if strings.IndexByte("0rtpxob", ch) < 0 {
					return fmt.Sprintf("`%s -%c` is an option the read-only table does not know", name, ch)
				}
			}
		}
	}
	rest := args[i:]
	if len(rest) == 0 {
		return "" // xargs runs echo
	}
	cmd := make([]arg, 0, len(rest)+1)
	for _, a := range rest {
		if replace != "" && a.known && strings.Contains(a.val, replace) {
			a = unknownArg("the input xargs reads")
		}
		cmd = append(cmd, a)
	}
	cmd = append(cmd, unknownArg("the input xargs reads"))
	if !cmd[0].known {
		return "xargs runs a command named by its input or an expansion, which cannot be proven read-only"
	}
	return c.run(cmd, false)
}

// checkEnv judges env's assignments and the command it runs.
func checkEnv(c *classifier, name string, args []arg) string {
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		if !a.known {
			break
		}
		v := a.val
		switch {
		case v == "--":
			i++
			break options
		case v == "-":
		case !strings.HasPrefix(v, "-"):
			break options
		case strings.HasPrefix(v, "--"):
			key, _, hasVal := strings.Cut(v, "=")
			switch {
			case longIs(key, "--split-string"):
				return fmt.Sprintf("`%s --split-string` splits a string into a command, which cannot be proven read-only", name)
			case longIs(key, "--unset") || longIs(key, "--chdir"):
				if !hasVal {
					i++
				}
			case longIs(key, "--ignore-environment") || longIs(key, "--null") || longIs(key, "--debug") ||
				longIs(key, "--block-signal") || longIs(key, "--default-signal") || longIs(key, "--ignore-signal") ||
				longIs(key, "--list-signal-handling") || key == "--help" || key == "--version":
			default:
				return fmt.Sprintf("`%s %s` is an option the read-only table does not know", name, key)
			}
		default:
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'i', '0', 'v':
				case 'u', 'C':
					if j == len(v)-1 {
						i++
					}
					j = len(v)
				case 'S':
					return fmt.Sprintf("`%s -S` splits a string into a command, which cannot be proven read-only", name)
				default:
					return fmt.Sprintf("`%s -%c` is an option the read-only table does not know", name, v[j])
				}
			}
		}
	}
	var names []string
	for ; i < len(args); i++ {
		a := args[i]
		if !a.known {
			if strings.Contains(a.prefix, "=") && !a.split {
				names = append(names, a.prefix[:strings.IndexByte(a.prefix, '=')])
				continue
			}
			return commandPositionReason(a)
		}
		key, _, ok := strings.Cut(a.val, "=")
		if !ok {
			break
		}
		names = append(names, key)
	}
	if i < len(args) {
		if r := c.run(args[i:], false); r != "" {
			return r
		}
	}
	for _, n := range names {
		if r := c.assignName(n); r != "" {
			return r
		}
	}
	return ""
}

// checkCommand allows command -v/-V (a lookup) and judges the command
// that command runs.
func checkCommand(c *classifier, name string, args []arg) string {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !a.known || !strings.HasPrefix(a.val, "-") || a.val == "-" {
			break
		}
		if a.val == "--" {
			i++
			break
		}
		for _, ch := range a.val[1:] {
			switch ch {
			case 'v', 'V':
				return ""
			case 'p':
			default:
				return fmt.Sprintf("`%s -%c` is an option the read-only table does not know", name, ch)
			}
		}
	}
	if i == len(args) {
		return ""
	}
	return c.run(args[i:], false)
}

// wrapper judges a command that runs another one after its own options
// (nice, timeout, stdbuf, time): valued lists the options that take a
// separate value, deny the ones that write, and positional how many
// operands come before the command (timeout's duration).
func wrapper(valued map[string]bool, deny map[string]string, positional int) func(*classifier, string, []arg) string {
	return func(c *classifier, name string, args []arg) string {
		i := 0
	options:
		for ; i < len(args); i++ {
			a := args[i]
			if !a.known {
				if a.flagLike {
					return unknownFlag(name, a)
				}
				break
			}
			v := a.val
			switch {
			case v == "--":
				i++
				break options
			case !strings.HasPrefix(v, "-") || v == "-":
				break options
			}
			key, _, _ := strings.Cut(v, "=")
			for d, why := range deny {
				if key == d || (strings.HasPrefix(d, "--") && longIs(key, d)) || (len(d) == 2 && !strings.HasPrefix(key, "--") && strings.HasPrefix(key, d)) {
					return fmt.Sprintf("`%s %s` %s", name, d, why)
				}
			}
			if valued[v] {
				i++
			}
		}
		i += positional
		if i >= len(args) {
			return ""
		}
		return c.run(args[i:], false)
	}
}

// checkSet allows the shell options scripts start with (set -euo
// pipefail, set -x) and printing the variables; set -k (assignments
// anywhere become environment variables) and other options are refused,
// and so are positional parameters from expansions.
func checkSet(_ *classifier, name string, args []arg) string {
	safeNames := map[string]bool{"errexit": true, "nounset": true, "pipefail": true, "xtrace": true, "verbose": true,
		"noglob": true, "noclobber": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.known {
			return fmt.Sprintf("`%s` with an argument from an expansion (%s) cannot be proven read-only", name, a.src)
		}
		v := a.val
		if v == "--" || v == "-" {
			return "" // positional parameters: plain values
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			return ""
		}
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'e', 'u', 'x', 'v', 'f', 'C':
			case 'o':
				if i+1 >= len(args) {
					return "" // set -o prints the options
				}
				i++
				if !args[i].known || !safeNames[args[i].val] {
					return fmt.Sprintf("`%s -o %s` cannot be proven read-only", name, args[i].src)
				}
			default:
				return fmt.Sprintf("`%s %c%c` cannot be proven read-only", name, v[0], v[j])
			}
		}
	}
	return ""
}
