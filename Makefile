# planserver: `make run` serves on planserver.db, `make test` runs every Go
# test, `make test-ui` the browser tests (CI runs both).
GO          ?= go
BIN         ?= bin/planserver
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# A program built with -race sleeps a second before it exits (the race
# runtime's atexit_sleep_ms, 1000 by default, is for C atexit handlers, which
# Go has none of): every test binary paid it, and so did every sandbox
# stage, CLI and attack helper a test runs from its own race-built binary,
# one to three a case. Options the caller sets in GORACE come after, and win.
export GORACE := atexit_sleep_ms=0 $(GORACE)

.PHONY: run build docs test test-attacks test-flaky test-postgres test-ui test-hosts lint bench stress fuzz fmt clean

## run: build, then serve on 127.0.0.1:8080 with the embedded SQLite default
## (planserver.db); ADDR picks another address: make run ADDR=127.0.0.1:9000
## (or PLANSERVER_ADDR=127.0.0.1:9000 make run, or planserver serve --addr)
# exec replaces the recipe's shell with the server, so the signal that stops
# make (Ctrl-C, or SIGTERM, which make passes on) reaches the server itself:
# `go run` would leave it running, orphaned, after a SIGTERM.
ADDR ?=
run: build
	exec $(BIN) serve $(if $(ADDR),--addr $(ADDR))

## build: static binaries in bin/: planserver, and beside it planserver-hook,
## the lean command form of host hooks (planserver hook install writes it),
## and planserver-sandbox, the lean planserver sandbox (the hook's rewritten
## commands name it)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/planserver
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(dir $(BIN))planserver-hook ./cmd/planserver-hook
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(dir $(BIN))planserver-sandbox ./cmd/planserver-sandbox

## docs: regenerate docs/cli.md, the CLI reference, from the commands' --help
## (TestCLIReferenceIsCurrent fails while it is stale)
docs:
	$(GO) run ./cmd/planserver docs cli > docs/cli.md.tmp && mv docs/cli.md.tmp docs/cli.md

## test: every Go test, with the race detector (no browser needed)
test:
	$(GO) test -race -count=1 ./...

## test-attacks: the whole plan-mode attack corpus (test/attacks), every case
## through every route the hooks judge a shell command by, run for real and
## checked on disk, network and processes; make test runs a fifth of it
test-attacks:
	PLANSERVER_ATTACKS=full $(GO) test -count=1 ./test/attacks

## test-flaky: the flaky-test hunt: the suite N times under -race with a CPU
## hog on every core, then the tests that failed and how often (.ci/test-flaky):
##   make test-flaky N=3 PKGS='./cmd/planserver ./internal/http'
N    ?= 10
PKGS ?= ./...
test-flaky:
	GO=$(GO) .ci/test-flaky $(N) $(PKGS)

## test-postgres: the same suites on PostgreSQL (every test through apitest, the
## store tests), the multi-replica tests, copy and migrate on PostgreSQL. Needs
## PLANSERVER_TEST_POSTGRES; .ci/postgres starts a throwaway server:
##   .ci/postgres make test-postgres
test-postgres:
	@test -n "$$PLANSERVER_TEST_POSTGRES" || { echo "PLANSERVER_TEST_POSTGRES is not set; run: .ci/postgres make test-postgres" >&2; exit 2; }
	$(GO) test -race -count=1 ./internal/...
	$(GO) test -race -count=1 -run 'Replica|Postgres|Copy' ./cmd/planserver

## test-ui: the browser tests in e2e/: Debian's Chromium, driven by
## playwright-core, against the real binary (docs/console.md)
CHROMIUM ?= /usr/bin/chromium
E2E_BIN  ?= $(CURDIR)/bin/planserver-e2e
test-ui:
	@test -x "$(CHROMIUM)" || { echo "make test-ui needs Chromium at $(CHROMIUM): run .ci/install-browser"; exit 1; }
	@test -d e2e/node_modules/playwright-core || (cd e2e && npm ci --no-audit --no-fund)
	$(GO) build -o $(E2E_BIN) ./cmd/planserver
	cd e2e && PLANSERVER_BIN=$(E2E_BIN) CHROMIUM=$(CHROMIUM) npm test

## test-hosts: the real agent hosts (Claude Code, opencode, Codex, Gemini CLI
## from npm, .ci/install-hosts) driven offline by a scripted model against
## the real binary: plan mode through their hooks, and the MCP snippets of
## docs/host-snippets.md (test/hosts)
test-hosts: build
	.ci/install-hosts
	PLANSERVER_REQUIRE_HOSTS=1 PLANSERVER_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 30m -v ./test/hosts

## bench: the load benchmark, each scenario against its baseline (docs/benchmarks.md);
## with PLANSERVER_BENCH_POSTGRES set, the PostgreSQL scenarios too:
##   PLANSERVER_PG_DURABLE=1 .ci/postgres make bench
BENCHFLAGS ?=
bench: build
	$(GO) run ./cmd/planbench -bin $(BIN) $(BENCHFLAGS)

## stress: the linearizability and crash tests at length (STRESS=2m each); with
## PLANSERVER_TEST_POSTGRES set, the three-replica ones too (at least 10,000
## operations): .ci/postgres make stress
STRESS ?= 2m
stress:
	PLANSERVER_STRESS=$(STRESS) $(GO) test -race -count=1 -timeout 60m \
		-run 'Linearizable|SIGKILL|GapFree' -v ./internal/http ./cmd/planserver

## fuzz: every fuzz target for FUZZTIME each (their seed corpora run in make test)
FUZZTIME ?= 1m
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
