# parse-mcp — the README's two commands are `make demo` and `make test`.
GO ?= go

.PHONY: build demo test test-engine2 check lint lint-budget lint-fix vet bench bench-floor fuzz release

# Linters, pinned and run with `go run module@version`: a fresh machine needs
# only the Go module proxy. staticcheck (its default checks include unused;
# configuration in staticcheck.conf) and the modernize analyzers.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
MODERNIZE   = golang.org/x/tools/go/analysis/passes/modernize/cmd/modernize@v0.52.0
GOCYCLO     = github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

# The short e2e subset of `make check`: stdio and HTTP, the policy envelope,
# a query, a refusal.
CHECK_E2E = ^(TestInitializeAndToolsList|TestPolicyAuditEventAndUntrustedData|TestQueryClassWhereOrderKeys|TestAggregateRefusalsThroughTheBinary|TestHTTPHealthAndGuards)$$

# Recipes that precede the server print to stderr and are silent (@): stdout
# belongs to the MCP protocol once the server starts.
# FerretDB's PostgreSQL backend is compiled out: the embedded database runs
# on SQLite only, and the unused backend (pgx and its pool) would cost the
# running server ~1.4 MB of resident memory and 5 MB of binary. The e2e
# harness builds with the same tags (e2e TestBuildTagsAsMakefile).
BUILD_TAGS = ferretdb_no_postgresql
# Without cgo, as the release binaries are (docs/release.md): a static
# binary maps no libc or dynamic loader, ~1.3 MB less resident memory when
# idle (docs/performance.md "Idle memory"). The e2e harness builds the same.
BUILD_ENV = CGO_ENABLED=0

# BIN is where `make build` puts the binary (the e2e TestMakeDemo points it
# at a temporary copy).
BIN ?= bin/parse-mcp

# The banner is printed only when there is no binary yet, the one slow build;
# a rebuild after a change is quick, and an up-to-date binary is not relinked.
build:
	@test -e $(BIN) || echo "building $(BIN) (the first build compiles the embedded database: a few minutes)" >&2
	@$(BUILD_ENV) $(GO) build -tags $(BUILD_TAGS) -o $(BIN) .

# Release builds for every desktop platform, the MCP bundles (packed and
# checked with the official mcpb CLI through npx), server.json and SHA256SUMS,
# all in dist/ (docs/release.md "Release builds"; internal/release).
release:
	$(GO) run ./internal/release -tags $(BUILD_TAGS) -out dist

# Serve MCP over stdio on the embedded sample Parse database: silent on
# stderr until a client speaks. Ctrl-C reaches the whole foreground process
# group: the server stops and exits 0, but make itself is interrupted too
# and, like any interrupted make, exits 130 (some versions print "Interrupt"); no
# recipe can change that (README "The two commands").
demo: build
	@$(BIN) --demo

# The whole suite: vet, the linters, then unit, e2e (the real binary over
# stdio and HTTP against the embedded FerretDB 1.24, or
# PARSE_MCP_TEST_MONGODB_URI), the real Parse Server tests and fuzz seed
# corpora; then the e2e suite a second time on the second engine.
test: vet lint
	$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) test-engine2

# The e2e suite (incl. the Parse Server parity tests) on the second engine:
# FerretDB 2.7 on PostgreSQL 18 + DocumentDB (internal/enginetest; needs root
# and mmdebstrap, else it skips with a message). A real MongoDB
# (PARSE_MCP_TEST_MONGODB_URI) takes precedence, so that is not run twice.
test-engine2:
	@if [ -n "$$PARSE_MCP_TEST_MONGODB_URI" ]; then echo "test-engine2: PARSE_MCP_TEST_MONGODB_URI is set: the suite already ran on that MongoDB" >&2; \
	else PARSE_MCP_TEST_ENGINE=documentdb $(GO) test -count=1 -timeout 30m ./e2e/; fi

# The inner loop: unit tests in short mode (no real Parse Server; unchanged
# packages come from the test cache) and a short e2e subset. `make test`
# stays the full suite.
check:
	$(GO) test -short ./internal/... ./server/... ./tools/... ./prompts/... ./resources/... ./policy/... .
	$(GO) test -count=1 -run '$(CHECK_E2E)' ./e2e/

# The second test engine's supervisor is a module of its own
# (internal/enginetest/ferretdb2): ./... does not reach it.
vet:
	$(GO) vet ./...
	cd internal/enginetest/ferretdb2 && $(GO) vet ./...

# gofmt -l lists unformatted files and exits 0 anyway: the recipe fails when
# the list is not empty.
lint: lint-budget
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt: unformatted files (run gofmt -w):" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(MODERNIZE) ./...
	cd internal/enginetest/ferretdb2 && $(GO) run $(STATICCHECK) ./... && $(GO) run $(MODERNIZE) ./...

# The complexity budget (ARCHITECTURE.md "Complexity budget"): no function
# outside the tests over cyclomatic complexity 25 (gocyclo) or 100 lines
# (internal/lintbudget). BUDGET_DIR is what is checked (the
# internal/lintbudget test points it at an over-budget input).
BUDGET_DIR ?= .
# Both checks run, so that one pass lists every function over the budget.
lint-budget:
	@status=0; \
	$(GO) run $(GOCYCLO) -over 25 -ignore '_test\.go$$' $(BUDGET_DIR) || status=1; \
	$(GO) run ./internal/lintbudget $(BUDGET_DIR) || status=1; \
	exit $$status

# Applies the modernize suggestions (then review the diff and run gofmt).
lint-fix:
	$(GO) run $(MODERNIZE) -fix ./...
	gofmt -l -w .

# Performance targets (figures are reported as benchmark metrics), then the
# driver floor (docs/performance.md "Performance": each tool's typical call through the
# binary against the bare driver) on the embedded FerretDB 1.24 and on the
# second engine (skipped with a message where it cannot run). The floor
# measures in rounds of its own (PARSE_MCP_BENCH_ROUNDS, PARSE_MCP_BENCH_CALLS),
# hence -benchtime 1x.
bench:
	$(GO) test -run '^$$' -bench . -skip DriverFloor -benchtime 20x ./e2e/ ./internal/parsedb/ ./policy/ ./tools/
	$(MAKE) bench-floor

# BASELINE=path/to/another/parse-mcp measures that build too, interleaved in
# the same rounds (a before-and-after table from one run).
bench-floor:
	PARSE_MCP_BENCH_BASELINE=$(BASELINE) $(GO) test -run '^$$' -bench DriverFloor -benchtime 1x -timeout 60m ./e2e/
	@if [ -n "$$PARSE_MCP_TEST_MONGODB_URI" ]; then echo "bench-floor: PARSE_MCP_TEST_MONGODB_URI is set: measured on that MongoDB" >&2; \
	else PARSE_MCP_BENCH_BASELINE=$(BASELINE) PARSE_MCP_TEST_ENGINE=documentdb $(GO) test -run '^$$' -bench DriverFloor -benchtime 1x -timeout 60m ./e2e/; fi

# A short fuzzing session on every fuzz target, found in the test sources so
# that a new Fuzz function is fuzzed without editing this recipe; FUZZTIME is
# each target's budget.
FUZZTIME ?= 60s
fuzz:
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go); do \
	    echo "fuzz: $$target ($$dir, $(FUZZTIME))" >&2; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$dir/ || exit 1; \
	  done; \
	done
