// Package attacks holds plan mode's public attack corpus (corpus.yaml, and
// the compositions of compose_test.go) and runs every case for real: each
// command goes through planserver's hook as a host sends it, whatever the
// hook lets the host run is run, and the test checks the disk byte for
// byte, a loopback listener and socket, a bystander process and the server
// itself. See attacks_test.go.
package attacks
