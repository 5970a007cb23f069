# parse-mcp — the README's two commands are `make demo` and `make test`.
GO ?= go

.PHONY: build demo test bench fuzz vet

# Recipes that precede the server print to stderr and are silent (@): stdout
# belongs to the MCP protocol once the server starts.
build:
	@echo "building bin/parse-mcp (the first build compiles the embedded database: a few minutes)" >&2
	@$(GO) build -o bin/parse-mcp .

# Serve MCP over stdio on the embedded sample Parse database. The built binary
# runs directly (not under `go run`), so Ctrl-C ends it with exit 0 and make
# reports no error.
demo: build
	@./bin/parse-mcp --demo

# The whole suite: unit, e2e (the real binary over stdio and HTTP against the
# embedded FerretDB, or PARSE_MCP_TEST_MONGODB_URI), fuzz seed corpora.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

# Performance targets (figures are reported as benchmark metrics).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./e2e/ ./internal/parsedb/ ./internal/policy/ ./internal/tools/

# A short fuzzing session on each fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzWhereToFilter -fuzztime 60s ./internal/parsedb/
	$(GO) test -run '^$$' -fuzz FuzzSelectKeysRedaction -fuzztime 60s ./internal/parsedb/
	$(GO) test -run '^$$' -fuzz FuzzValidatePipeline -fuzztime 60s ./internal/policy/
	$(GO) test -run '^$$' -fuzz FuzzStdioFraming -fuzztime 60s ./internal/server/
