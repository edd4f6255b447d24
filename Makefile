# planserver: `make run` serves on planserver.db, `make test` runs every test.
GO          ?= go
BIN         ?= bin/planserver
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run build test lint fmt tidy clean

## run: serve on 127.0.0.1:8080 with the embedded SQLite default (planserver.db)
run:
	$(GO) run ./cmd/planserver serve

## build: a static binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/planserver

## test: every test, with the race detector
test:
	$(GO) test -race -count=1 ./...

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
