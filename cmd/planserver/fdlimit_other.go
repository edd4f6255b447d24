//go:build !unix

package main

import "errors"

// raiseFDLimit reports a conservative limit where there is no
// RLIMIT_NOFILE to read.
func raiseFDLimit() fdLimit {
	return fdLimit{soft: 1024, hard: 1024, err: errors.New("no RLIMIT_NOFILE on this system")}
}
