# `make demo` and `make test` each set up .venv first (idempotent), then run.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.rlcompare-installed
# The built-in plugins: each a distribution of its own, installed like any outside package.
BUILTIN_DISTS := criteria adapters/sb3 adapters/tianshou adapters/rllib adapters/torchrl adapters/skrl adapters/evotorch adapters/sample_factory

.PHONY: install demo test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml $(addsuffix /pyproject.toml,$(BUILTIN_DISTS))
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the CPU build of torch first, so no dependency pulls a CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]' $(addprefix -e ,$(BUILTIN_DISTS))
	# bytecode for the project's own modules: with PYTHONDONTWRITEBYTECODE set (as on this
	# workplace's machines) every command would otherwise compile them again at start-up
	PYTHONDONTWRITEBYTECODE= $(PY) -m compileall -q rlcompare adapters criteria
	touch $(STAMP)

demo: install
	$(VENV)/bin/rlcompare run --suite quick --jobs 2 --store rlcompare.db; status=$$?; \
	$(VENV)/bin/rlcompare report --store rlcompare.db --out reports/demo --format html,md && \
	$(VENV)/bin/rlcompare cite --store rlcompare.db --format bibtex | tee reports/demo/rlcompare-matrix.bib && \
	exit $$status

# The HTML report's browser test drives Debian's chromium (never a browser download): installed
# here where it is missing and apt-get can; the test says why it skips where it cannot.
test: install
	@if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
		{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive \
		  apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; } || \
		echo "chromium could not be installed: the browser test will skip"; \
	fi
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check rlcompare adapters criteria tests benchmarks

bench: install
	$(PY) benchmarks/overhead.py

clean:
	rm -rf $(VENV) rlcompare.db rlcompare.db-wal rlcompare.db-shm .pytest_cache reports/demo
