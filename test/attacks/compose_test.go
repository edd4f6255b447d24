package attacks

import (
	"fmt"
	"strings"
)

// payloads are one-line effects an attack wants, each written without a
// single quote so that every wrapper below can carry it.
var payloads = []string{
	"touch pwned",
	"rm -f victim.txt",
	"echo x > pwned",
	"chmod 600 victim.txt",
	"mv victim.txt moved",
	"mkdir made",
	"git tag pwned",
	"cat < /dev/tcp/127.0.0.1/{{TCP}}",
	"echo x > /dev/udp/127.0.0.1/{{UDP}}",
	"kill -STOP {{PID}}",
	"prlimit --pid {{PID}} --nofile=5:5",
}

// wrappers put a payload (%[1]s) inside the forms a shell offers to run a
// command: runners, subshells, substitutions, functions, control flow.
var wrappers = []string{
	"%[1]s",
	"bash -c '%[1]s'",
	"sh -c '%[1]s'",
	"eval '%[1]s'",
	"env %[1]s",
	"nice %[1]s",
	"timeout 5 %[1]s",
	"command %[1]s",
	"( %[1]s )",
	"{ %[1]s; }",
	"echo $(%[1]s)",
	"true && %[1]s",
	"false || %[1]s",
	"ls >/dev/null; %[1]s",
	"if true; then %[1]s; fi",
	"for i in 1; do %[1]s; done",
	"f() { %[1]s; }; f",
	"xargs -I{} sh -c '%[1]s' <<< x",
	"cat <(%[1]s)",
	"%[1]s & wait",
	"setsid %[1]s",
	"stdbuf -o0 %[1]s",
	"case x in x) %[1]s;; esac",
	": $(%[1]s)",
}

// composed is every wrapper around every payload.
func composed() []Case {
	var out []Case
	for wi, w := range wrappers {
		for pi, p := range payloads {
			out = append(out, Case{
				Name:  fmt.Sprintf("composed/w%02d-p%02d", wi, pi),
				Class: "composed: " + strings.ReplaceAll(w, "%[1]s", "…"),
				Cmd:   fmt.Sprintf(w, p),
			})
		}
	}
	return out
}
