# `make demo` and `make test` each set up .venv first (idempotent), then run.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# uv (default) or pip
INSTALLER ?= uv
# Python writes each module's bytecode the first time it is imported, also where the environment
# says not to (PYTHONDONTWRITEBYTECODE): compiling every installed module up front (torch, Ray, ...)
# takes over a minute on 2 CPUs, while the modules a demo or the tests import compile in about 15 s,
# once, on first use.
export PYTHONDONTWRITEBYTECODE :=
STAMP := $(VENV)/.rlcompare-installed
# The built-in plugins: each a distribution of its own, installed like any outside package.
# The RL Baselines3 Zoo's files only (its tuned hyperparameters, SB3's settings in the native arm of the
# studies); its dependencies (optuna, the Hugging Face client, SB3-Contrib) serve the zoo's own training
# scripts, which rlcompare does not run. `pip install 'rlcompare-sb3[zoo]'` installs it whole.
ZOO := 'rl-zoo3==2.9.2'
BUILTIN_DISTS := criteria adapters/sb3 adapters/tianshou adapters/rllib adapters/torchrl adapters/skrl adapters/evotorch adapters/sample_factory adapters/rsl_rl adapters/rejax adapters/d3rlpy \
	adapters/rl_games adapters/mushroom_rl adapters/sbx adapters/trl adapters/tunix

.PHONY: install demo demo-all test lint bench clean

install: $(STAMP)

# uv installs (about 10x faster than pip); `make install INSTALLER=pip` is the fallback. uv does not
# read pip's configuration: rlcompare.pyenvs.indexes prints pip's index settings as uv options (the
# standard library only, so it runs before anything is installed), so torch comes as the CPU build
# pip would take.
$(STAMP): pyproject.toml $(addsuffix /pyproject.toml,$(BUILTIN_DISTS))
ifeq ($(INSTALLER),pip)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the CPU build of torch first, so no dependency pulls a CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,envpool]' $(addprefix -e ,$(BUILTIN_DISTS))
	$(PY) -m pip install --quiet --no-deps $(ZOO)
else
	# the venv without ensurepip's copy of pip (10 s of the install on 2 CPUs): the system's pip puts
	# uv into it (pip 22.3 or newer; older ones fall back to ensurepip), and uv installs pip and
	# setuptools with the rest, so the venv holds what `python -m venv` would have given it
	test -x $(PY) || $(PYTHON) -m venv --without-pip $(VENV)
	test -x $(VENV)/bin/uv || $(PYTHON) -m pip --python $(PY) install --quiet 'uv>=0.5' || \
		{ $(PY) -m ensurepip --upgrade && $(PY) -m pip install --quiet 'uv>=0.5'; }
	$(VENV)/bin/uv pip install --quiet --python $(PY) \
		$$(PYTHONPATH=. $(PY) -m rlcompare.pyenvs.indexes) \
		torch==2.13.0 pip setuptools -e '.[test,envpool]' $(addprefix -e ,$(BUILTIN_DISTS))
	$(VENV)/bin/uv pip install --quiet --python $(PY) $$(PYTHONPATH=. $(PY) -m rlcompare.pyenvs.indexes) --no-deps $(ZOO)
endif
	# bytecode for the project's own modules now (a command run outside make, with
	# PYTHONDONTWRITEBYTECODE set, would otherwise compile them again at every start-up)
	$(PY) -m compileall -q rlcompare adapters criteria
	touch $(STAMP)

# The demo answers one question (which PyTorch PPO library learns CartPole fastest here, and at what
# cost?) with four frameworks, two seeds each: about three minutes on 2 CPUs from a fresh clone, install included.
DEMO_ADAPTERS := sb3,skrl,tianshou,torchrl

demo: install
	@echo "rlcompare demo: CartPole PPO with $(DEMO_ADAPTERS), 2 seeds each; about 3 minutes on 2 CPUs, install included"
	$(VENV)/bin/rlcompare run --suite demo --adapters $(DEMO_ADAPTERS) --jobs 2 --store rlcompare.db; status=$$?; \
	$(VENV)/bin/rlcompare report --store rlcompare.db --out reports/demo --format html,md --summary && \
	$(VENV)/bin/rlcompare cite --store rlcompare.db --format bibtex > reports/demo/rlcompare-matrix.bib && \
	echo "citation: reports/demo/rlcompare-matrix.bib" && exit $$status

# Every built-in adapter on the quick suite (Sample Factory builds its own environment first).
demo-all: install
	@echo "rlcompare demo-all: CartPole PPO with every built-in adapter, 2 seeds each (the GRPO libraries TRL and Tunix are refused: rlcompare run --suite llm-tiny compares them); about 8 minutes on 2 CPUs, and about a minute more the first time (the environments of Sample Factory, rl_games, rejax and SBX are built)"
	$(VENV)/bin/rlcompare run --suite quick --jobs 2 --store rlcompare-all.db; status=$$?; \
	$(VENV)/bin/rlcompare report --store rlcompare-all.db --out reports/demo-all --format html,md --summary && \
	$(VENV)/bin/rlcompare cite --store rlcompare-all.db --format bibtex > reports/demo-all/rlcompare-matrix.bib && \
	echo "citation: reports/demo-all/rlcompare-matrix.bib" && exit $$status

# pytest-xdist, one worker per usable CPU (at most 4, tests/conftest.py), each test module on one
# worker so that its shared real runs are made once. On 2 CPUs the serial suite keeps about one CPU
# busy (user time equals wall time: most tests wait on one process at a time), and two workers took
# 17 min 30 s against 27 min 16 s serially in the same hour. PYTEST_ARGS= (empty) runs it serially.
PYTEST_ARGS ?= -n auto --dist loadfile

# The HTML report's browser test drives Debian's chromium (never a browser download): installed
# here where it is missing and apt-get can; the test says why it skips where it cannot.
test: install
	@if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
		{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive \
		  apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; } || \
		echo "chromium could not be installed: the browser test will skip"; \
	fi
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check rlcompare adapters criteria tests benchmarks

bench: install
	$(PY) benchmarks/overhead.py

clean:
	rm -rf $(VENV) rlcompare.db rlcompare.db-wal rlcompare.db-shm rlcompare-all.db rlcompare-all.db-wal \
		rlcompare-all.db-shm .pytest_cache reports/demo reports/demo-all
