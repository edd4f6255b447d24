// Command planserver-hook is the command form of host hooks, lean: a host
// starts it before every tool call, so its start-up is added to every call.
// It links only internal/hosthookwire and a small part of the standard library
// (no net/http, no TLS, no shell parser; see the hosthookwire package comment
// for the measured cost of each), reads the host's input, asks planserver
// (POST /v1/hooks/{host}) and prints the answer.
//
// Whatever it cannot do itself it hands over to planserver hook, in the
// planserver binary beside it (where make build and planserver hook install
// put them): judging the call when planserver could not be asked (reads
// allowed, everything else denied, saying why), https and proxies, and
// every refusal of bad flags or input, so that those rules keep one home
// (internal/hosthookcmd). Without planserver beside it, such a call is denied.
//
//	planserver-hook HOST [--server URL] [--token-file FILE] [--session ID | --parent ID] [--timeout D]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/planserver/planserver/internal/hosthookproto"
	"github.com/planserver/planserver/internal/hosthookwire"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 || hosthookwire.IsHelp(args[0]) || (len(args) > 1 && anyHelp(args[1:])) {
		fmt.Print(usage)
		if len(args) == 0 {
			os.Exit(2)
		}
		return
	}
	if args[0] == "install" || args[0] == "uninstall" {
		fmt.Fprintf(os.Stderr, "planserver-hook: %s is planserver's: run planserver hook %s HOST\n", args[0], args[0])
		os.Exit(2)
	}
	defer func() {
		// A host runs the tool when its hook fails: a panic must still be
		// a denial on stdout, never a stack trace and an exit status.
		if r := recover(); r != nil {
			msg := fmt.Sprintf("[planserver hook] planserver-hook failed (internal error: %v). The call is refused so that plan mode cannot be bypassed.", r)
			fmt.Fprintln(os.Stderr, msg)
			os.Stdout.Write(append(hosthookwire.AnyHostDeny(msg), '\n'))
		}
	}()
	os.Stdout.Write(append(answer(args[0], args[1:]), '\n'))
}

const usage = `Usage:
  planserver-hook HOST [--server URL] [--token-file FILE] [--session ID | --parent ID] [--timeout D]

The lean form of planserver hook HOST (planserver hook --help tells the
settings): what a host runs before every tool call. It hands over to
planserver hook, in the planserver binary beside it, whatever it does not do
itself: judging a call while planserver cannot be asked, https and proxies.
`

// answer is the host's output for one call: planserver's answer when the
// question goes through, else planserver hook's.
func answer(host string, args []string) []byte {
	raw, err := io.ReadAll(io.LimitReader(os.Stdin, hosthookproto.MaxInput+1))
	if err != nil || len(raw) > hosthookproto.MaxInput {
		return handOver(host, args, raw, "")
	}
	set, err := hosthookwire.ParseFlags(args, os.Getenv)
	if err != nil || set.Check() != nil || set.OfflineReason != "" {
		return handOver(host, args, raw, "")
	}
	token, err := hosthookwire.Token(set, os.Getenv)
	if err != nil {
		return handOver(host, args, raw, "")
	}
	req, err := hosthookwire.NewRequest(set, token, host, raw)
	if err != nil || !hosthookwire.Direct(req.URL, os.Getenv) {
		return handOver(host, args, raw, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), set.Timeout)
	defer cancel()
	status, body, err := hosthookwire.Send(ctx, req)
	if err != nil {
		return handOver(host, args, raw, fmt.Sprintf("planserver did not answer: %v", err))
	}
	out, err := hosthookwire.Answer(status, body)
	if err != nil {
		return handOver(host, args, raw, err.Error())
	}
	return out
}

// handOver runs planserver hook HOST ARGS on the same input and returns
// its answer. With a reason, planserver was asked and could not answer:
// planserver hook judges the call at once, saying why, without asking
// again (so the call stays within one --timeout). Without one, it does
// all of it: flags, input, the question, and any refusal.
func handOver(host string, args []string, raw []byte, reason string) []byte {
	argv := append([]string{"hook", host}, args...)
	if reason != "" {
		argv = append(argv, "--offline-reason", reason)
	}
	exe, err := os.Executable()
	full := filepath.Join(filepath.Dir(exe), "planserver")
	if err == nil {
		cmd := exec.Command(full, argv...)
		var out bytes.Buffer
		cmd.Stdin = io.MultiReader(bytes.NewReader(raw), os.Stdin)
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		err = cmd.Run()
		if err == nil && json.Valid(out.Bytes()) {
			return bytes.TrimSpace(out.Bytes())
		}
		if err == nil {
			err = fmt.Errorf("it printed no JSON: %.200q", out.String())
		}
	}
	if hosthookwire.IsReport(host, raw) {
		// A report of a run never blocks: the tool ran already.
		fmt.Fprintf(os.Stderr, "[planserver hook] planserver-hook could not pass on this report of a run, and planserver hook, in %s, failed: %v\n", full, err)
		return []byte("{}")
	}
	why := reason
	if why == "" {
		why = "it needs planserver hook for this call"
	}
	msg := fmt.Sprintf("[planserver hook] planserver-hook could not answer by itself (%s), and planserver hook, in %s, failed: %v. "+
		"The call is refused so that plan mode cannot be bypassed. Install planserver beside planserver-hook (make build puts them together), or ask the user to.", why, full, err)
	fmt.Fprintln(os.Stderr, msg)
	return hosthookwire.AnyHostDeny(msg)
}

func anyHelp(args []string) bool {
	for _, a := range args {
		if hosthookwire.IsHelp(a) {
			return true
		}
	}
	return false
}
