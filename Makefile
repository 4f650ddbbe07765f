# Two commands for a newcomer: `make demo` (the main job on the bundled data) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-engine sglang-venvs incident-sglang test-browser fuzz lint format lab bench data clean check-core incident

# The package with every extra, editable, resolved together with requirements.txt: its pins are
# the lock of this venv (torch's CPU build among them); pyproject.toml's ranges are what a user's
# `pip install eagle3-debug-kit` accepts. A pin outside a range fails here, loudly.
$(STAMP): requirements.txt pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt -e '.[all]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m kit run --out runs/demo

# Test files run in parallel, each whole on one worker (its module fixtures built once):
# the notebook runs on one core while the rest share the other. TEST_WORKERS=0: serial.
TEST_WORKERS ?= 2
test: $(STAMP) lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --ignore=tests_engine

# The real engine on the bundled pair (tests_engine/, README "The real engine"): vLLM's CPU build
# in its own venv. It pulls CUDA-linked torchvision, torchaudio and torchcodec that vLLM's imports
# fail on without CUDA, so they go; the kit goes in without its notebook stack.
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

$(VLLM_STAMP): requirements-vllm.txt
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-vllm.txt
	$(VLLM_VENV)/bin/pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(VLLM_STAMP)

# Real SGLang beside it (README "The real engine"): one venv with sglang 0.5.10 over what its CPU
# path imports (requirements-sglang.txt; the kit's stand-ins in place of its CUDA kernels), and
# one small venv per other release: that wheel alone, --no-deps, in front of the first venv's
# packages (a .pth file adds them), with what the release pins beyond them.
SGLANG_VENV ?= .venv-sglang
SGLANG_STAMP := $(SGLANG_VENV)/.installed
SGLANG_BASE := 0.5.10
SGLANG_OVERLAYS := 0.5.11 0.5.12 0.5.23
SGLANG_PINS_0.5.23 := transformers==5.19.0 tokenizers==0.23.2 apache-tvm-ffi==0.1.11 xgrammar==0.2.7 \
	openai==2.8.0
SGLANG_STAMPS := $(SGLANG_STAMP) $(foreach v,$(SGLANG_OVERLAYS),$(SGLANG_VENV)-$(v)/.installed)
SGLANG_PYTHONS := $(subst $() ,:,$(abspath $(SGLANG_VENV)/bin/python \
	$(foreach v,$(SGLANG_OVERLAYS),$(SGLANG_VENV)-$(v)/bin/python)))

$(SGLANG_STAMP): requirements-sglang.txt
	$(PYTHON) -m venv $(SGLANG_VENV)
	$(SGLANG_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-sglang.txt
	$(SGLANG_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps \
		sglang==$(SGLANG_BASE) -e .
	touch $(SGLANG_STAMP)

$(SGLANG_VENV)-%/.installed: $(SGLANG_STAMP)
	$(PYTHON) -m venv $(SGLANG_VENV)-$*
	base=$$($(SGLANG_VENV)/bin/python -c 'import site; print(site.getsitepackages()[0])') && \
	here=$$($(SGLANG_VENV)-$*/bin/python -c 'import site; print(site.getsitepackages()[0])') && \
	echo "import site; site.addsitedir('$$base')" > $$here/zz-sglang-base.pth
	$(SGLANG_VENV)-$*/bin/pip install --quiet --disable-pip-version-check --no-deps \
		sglang==$* $(SGLANG_PINS_$*)
	touch $@

sglang-venvs: $(SGLANG_STAMPS)

# The incident on real SGLang 0.5.10 on this CPU (README "The real engine"): SGLang's own line,
# the kit's verdict on it, the engine after the fixes; runs/incident-sglang/incident.json. The
# folder is this target's own: a rerun starts it afresh (the command keeps an existing --out).
incident-sglang: $(SGLANG_STAMP)
	rm -rf runs/incident-sglang
	$(SGLANG_VENV)/bin/python -m kit.offline_acceptance.sglang_incident --out runs/incident-sglang

# its own --basetemp: pytest prunes the shared default one while the engines still write there
test-engine: $(VLLM_STAMP) $(SGLANG_STAMPS)
	mkdir -p runs  # pytest creates --basetemp itself, not its parent
	SGLANG_PYTHON=$(SGLANG_PYTHONS) $(VLLM_VENV)/bin/python -m pytest -q -rxXf -p no:cacheprovider \
		--durations=0 --basetemp=runs/test-engine tests_engine

# JupyterLab driven in a real browser (tests_browser/): `make lab`'s server, headless chromium
# through playwright (requirements-browser.txt, into this venv; playwright's own browser download
# is not used). Every notebook opened, run, saved and explored as notebooks/README.md tells a
# person to; screenshots in runs/test-browser/. CHROMIUM=/path picks another chromium.
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser)
BROWSER_STAMP := $(VENV)/.installed-browser

$(BROWSER_STAMP): requirements-browser.txt $(STAMP)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-browser.txt
	touch $(BROWSER_STAMP)

test-browser: $(BROWSER_STAMP)
	@test -x "$(CHROMIUM)" || { echo "make test-browser: no chromium found$(if $(CHROMIUM), at $(CHROMIUM)): install it (apt-get install chromium) or pass CHROMIUM=/path/to/chromium" >&2; exit 2; }
	CHROMIUM="$(CHROMIUM)" $(PY) -m pytest -q -p no:cacheprovider --durations=0 tests_browser

# The long fuzz profile (CI): new cases on every run, a few hundred to a thousand per test, under
# six minutes on 2 cores. `make test` runs the same tests with the bounded profile (docs/limits.md).
fuzz: $(STAMP)
	KIT_FUZZ=long $(PY) -m pytest -q tests/fuzz $(FUZZ_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The incident team's draft checkpoint (kit/incident.py): 4.3 GB declared, written sparse (a few
# MB on disk, under a second) beside its config, so the notebooks' defaults and the README's
# doctor line read what the team held. `make demo` writes it too.
incident: $(STAMP)
	$(PY) -c "from kit.incident import draft_checkpoint; print(draft_checkpoint())"

# JupyterLab rooted at the repo (data/ and runs/ reachable), this checkout's kit importable in the
# kernels, the notebooks/*.py scripts opened as notebooks (jupytext; .jupyter/ makes that Lab's
# default viewer). On a remote machine: make lab LAB_ARGS="--ip=0.0.0.0 --no-browser" (see
# notebooks/README.md); as root (GPU containers) --allow-root is added, or Jupyter will not start.
LAB_ARGS ?=
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP) incident
	JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))" \
	PYTHONPATH="$(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))" \
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. $(LAB_ROOT_FLAG) $(LAB_ARGS) \
		--LabApp.default_url=/lab/tree/notebooks/01_key_inspection.py notebooks/01_key_inspection.py

# The wheel installed alone (no extras, no torch) in a fresh venv, its commands run from outside
# the checkout (CI runs it too).
check-core: $(STAMP)
	tests/package/check_core.sh

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf runs bench/out .pytest_cache build dist
