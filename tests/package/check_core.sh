#!/usr/bin/env bash
# The package as a user on a serving machine installs it: the wheel, built from this checkout,
# installed alone (no extras) into a fresh venv, then the torch-free commands run from a folder
# outside the checkout. Fails if the core pulls in torch, transformers, plotly, papermill or
# JupyterLab, if a command needs the checkout, if a --json output leaves its schema, or if a
# command that needs an extra does anything but name it (one line, exit 2).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${PY:-$REPO/.venv/bin/python}"  # builds the wheel, validates the JSON (jsonschema)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
DATA="$WORK/data"
mkdir -p "$DATA"
cp -r "$REPO/data/pair" "$REPO/data/incident" "$REPO/data/samples/speculators-0.9.0-tiny" \
  "$DATA/"

step() { printf "== %s (%ss)\n" "$*" "$SECONDS"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "build the wheel"
"$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$WORK/dist" "$REPO" >/dev/null
WHEEL="$(ls "$WORK"/dist/eagle3_debug_kit-*.whl)"
du -k "$WHEEL" | awk '{ printf "   %s: %d KiB\n", "wheel", $1 }'

step "install the core alone into a fresh venv"
# no pip inside it (thousands of files to write and remove): the lock venv's pip installs into it
"${PYTHON:-python3}" -m venv --without-pip "$WORK/core"
"$PY" -m pip --python "$WORK/core/bin/python" install --quiet --disable-pip-version-check \
  "$WHEEL" 2>&1 | grep -v '^WARNING: Location' || true
for heavy in torch transformers accelerate safetensors plotly papermill jupyterlab nbformat; do
  "$WORK/core/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('$heavy') is not None)" \
    || fail "the core install brought in $heavy"
done

cd "$WORK"  # outside the checkout: package data must come from the installed package
KIT="$WORK/core/bin/eagle3-kit"
"$WORK/core/bin/python" -c "import kit, sys; sys.exit(not kit.__file__.startswith('$WORK/core/'))" \
  || fail "kit is imported from somewhere other than the installed wheel"

json() {  # json NAME ARGS...: the command's --json output in NAME.json; exit code 0 or 1 only
  local name="$1"; shift
  local rc=0
  "$KIT" "$@" --json >"$name.json" || rc=$?
  [ "$rc" -le 1 ] || fail "$name exited $rc: $(cat "$name.json")"
}

step "torch-free commands, --json checked against docs/schemas"
json inspect inspect "$DATA/pair/draft"
json simulate simulate "$DATA/speculators-0.9.0-tiny" --engine sglang==0.5.10
json matrix simulate "$DATA/speculators-0.9.0-tiny" --engine all
json fix fix "$DATA/speculators-0.9.0-tiny" --engine sglang==0.5.10 --out "$WORK/fixed"
json acceptance acceptance "$DATA/incident/logs/before.log"
json deployment deployment --launch "$DATA/incident/launch.sh"
json deployment-pair deployment --draft "$DATA/pair/draft" --target-config "$DATA/pair/target"
grep -q "eagle3-debug-kit\[offline\]" deployment-pair.json || fail "no skipped check names the extra"
json doctor doctor --draft "$DATA/pair/draft" --log "$DATA/incident/logs/before.log"
"$PY" "$REPO/tests/package/schemas.py" ./*.json || fail "a --json output leaves its schema"
grep -q '"report": "doctor"' doctor.json && grep -q '"schema_version": 1' doctor.json
"$KIT" --help | grep -q "^    doctor " || fail "--help does not list doctor"
"$WORK/core/bin/python" -m kit --version | grep -q "^eagle3-kit " || fail "python -m kit"
"$KIT" inspect "$DATA/pair/draft" --quiet >/dev/null

step "commands that need an extra name it"
expect_extra() {  # expect_extra EXTRA ARGS...
  local extra="$1"; shift
  local rc=0
  "$KIT" "$@" >out.txt 2>err.txt || rc=$?
  [ "$rc" -eq 2 ] || fail "$1 exited $rc, not 2"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$1 printed more than one line: $(cat err.txt)"
  grep -q "pip install 'eagle3-debug-kit\[$extra\]'" err.txt || fail "$1: $(cat err.txt)"
  echo "   $1: $(cat err.txt)"
}
expect_extra offline offline --target "$DATA/pair/target" --draft "$DATA/pair/draft"
expect_extra offline trace --draft "$DATA/incident/kimi-k2.5/draft" \
  --target-config "$DATA/incident/kimi-k2.5/target" --engine sglang==0.5.10
expect_extra notebooks run --out "$WORK/run"
[ ! -e "$WORK/run" ] || fail "run wrote $WORK/run before naming the extra"
step "ok"
