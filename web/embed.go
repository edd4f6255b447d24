// Package web embeds the review console: plain HTML, CSS and ES modules,
// with no build step, served by the binary at /ui/ (internal/http/ui.go).
// The browser tests that drive it live in e2e/.
package web

import "embed"

// Files holds index.html and everything under assets/. Nothing else in
// this directory is served.
//
//go:embed index.html assets
var Files embed.FS
