# Two commands for a newcomer: `make demo` (the main job on the bundled data) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint format lab bench organism data clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m kit run --out runs/demo

test: $(STAMP) lint
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# JupyterLab rooted at the repo (data/ and runs/ reachable), the kit importable from the venv.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. notebooks/01_key_inspection.ipynb

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf runs bench/out .pytest_cache
