package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pinning keeps the server and the load generator off each other's cores
// where the machine has enough of them (-cpus, -server-cpus, -client-cpus).
// A process is pinned by exec'ing it from a thread whose affinity is set:
// the new image inherits that thread's affinity, every thread it starts
// inherits it in turn, and the Go runtime sizes GOMAXPROCS from it.

// cpuSet is a list of CPU numbers, as in taskset's "0-3,8".
type cpuSet []int

func parseCPUs(s string) (cpuSet, error) {
	var out cpuSet
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("CPU list %q: want numbers and ranges like 0-3,8", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (c cpuSet) String() string {
	parts := make([]string, len(c))
	for i, n := range c {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// availableCPUs lists the CPUs this process may run on.
func availableCPUs() (cpuSet, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out cpuSet
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// splitCPUs gives the server the first n available CPUs and the load
// generator the rest (-cpus n).
func splitCPUs(n int) (server, client cpuSet, err error) {
	all, err := availableCPUs()
	if err != nil {
		return nil, nil, err
	}
	if n < 1 || n >= len(all) {
		return nil, nil, fmt.Errorf("-cpus %d: this machine offers %d CPUs; the server needs at least 1 and the load generator the rest", n, len(all))
	}
	return all[:n], all[n:], nil
}

// execPinned replaces this process with prog on the CPUs in set.
func execPinned(set cpuSet, prog string, args, env []string) error {
	var mask unix.CPUSet
	for _, c := range set {
		mask.Set(c)
	}
	runtime.LockOSThread() // the affinity is the calling thread's
	if err := unix.SchedSetaffinity(0, &mask); err != nil {
		return fmt.Errorf("pin to CPUs %s: %w", set, err)
	}
	return syscall.Exec(prog, args, env)
}

// pinnedEnv carries the CPU split into the load generator re-executed on
// its CPUs ("server;client"): once pinned, it sees only its own CPUs and
// could not split them again.
const pinnedEnv = "PLANBENCH_PINNED"

// pinned returns the split a re-executed planbench was started with.
func pinned() (server, client cpuSet, ok bool, err error) {
	v := os.Getenv(pinnedEnv)
	if v == "" {
		return nil, nil, false, nil
	}
	s, c, found := strings.Cut(v, ";")
	if !found {
		return nil, nil, false, fmt.Errorf("%s=%q: want SERVER;CLIENT", pinnedEnv, v)
	}
	if server, err = parseCPUs(s); err == nil {
		client, err = parseCPUs(c)
	}
	return server, client, err == nil, err
}

// pinSelf re-executes planbench on client, remembering the split.
func pinSelf(server, client cpuSet) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return execPinned(client, self, os.Args, append(os.Environ(), pinnedEnv+"="+server.String()+";"+client.String()))
}

// pinMain is planbench's hidden "pin" mode, the wrapper that starts a
// server process on its CPUs: planbench pin CPUS PROG [ARG...].
func pinMain(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: planbench pin CPUS PROG [ARG...]")
	}
	set, err := parseCPUs(args[0])
	if err != nil {
		return err
	}
	return execPinned(set, args[1], args[1:], os.Environ())
}
