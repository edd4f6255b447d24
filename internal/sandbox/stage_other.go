//go:build !linux || !(amd64 || arm64)

package sandbox

import (
	"fmt"
	"io"
	"runtime"
)

func available() (int, error) {
	return 0, fmt.Errorf("%w: the sandbox needs Linux (Landlock and seccomp) on amd64 or arm64, not %s/%s",
		ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}

func stage(_ stageArgs, stderr io.Writer) int {
	_, err := available()
	fmt.Fprintln(stderr, "planserver sandbox:", err)
	return ExitUnavailable
}

func supervise([]string, []Endpoint, Options) (int, bool, error) {
	_, err := available()
	return ExitUnavailable, false, err
}
