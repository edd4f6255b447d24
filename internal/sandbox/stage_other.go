//go:build !linux || !(amd64 || arm64)

package sandbox

import (
	"fmt"
	"runtime"
)

func available() (int, error) {
	return 0, fmt.Errorf("%w: the sandbox needs Linux (Landlock and seccomp) on amd64 or arm64, not %s/%s",
		ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}

func stage(string, []uint16, []string) (int, error) {
	_, err := available()
	return ExitUnavailable, err
}
