//go:build unix

package serveconfig

import "syscall"

// RaiseFDLimit raises the soft RLIMIT_NOFILE to the hard limit: every
// connection and event stream is a descriptor, and the soft default (often
// 1024) is far below what the hard limit allows. The Go runtime does the
// same at start (since Go 1.19); doing it here too keeps it explicit and
// reports what serve ends up with, which the connection caps derive from.
func RaiseFDLimit() FDLimit {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return FDLimit{Soft: 1024, Hard: 1024, Err: err}
	}
	if rl.Cur < rl.Max {
		raised := rl
		raised.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return FDLimit{Soft: uint64(rl.Cur), Hard: uint64(rl.Max), Err: err}
		}
		rl = raised
	}
	return FDLimit{Soft: uint64(rl.Cur), Hard: uint64(rl.Max)}
}
