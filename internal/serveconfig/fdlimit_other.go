//go:build !unix

package serveconfig

import "errors"

// RaiseFDLimit reports a conservative limit where there is no
// RLIMIT_NOFILE to read.
func RaiseFDLimit() FDLimit {
	return FDLimit{Soft: 1024, Hard: 1024, Err: errors.New("no RLIMIT_NOFILE on this system")}
}
