# Sourced by scripts/demo and scripts/test: make ./.venv and install memfold into it.
# Re-installs only when pyproject.toml changed. Needs Python >= 3.11 on PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${MEMFOLD_PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PY="$candidate"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "memfold needs Python >= 3.11 on PATH" >&2; exit 2; }

memfold_venv() {  # $1: core | all
  local mode="$1" stamp want
  want="$mode:$(cat "$ROOT/pyproject.toml" | "$PY" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  stamp="$(cat "$VENV/.memfold-stamp" 2>/dev/null || true)"
  if [ "$stamp" = "$want" ] || { [ "$mode" = core ] && [ "${stamp#all:}" = "${want#core:}" ]; }; then
    return 0
  fi
  echo "setting up $VENV ($mode) ..." >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade "pip>=25.1" >&2
  if [ "$mode" = all ]; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[all]" --group "$ROOT/pyproject.toml:dev" >&2
  else
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT" >&2
  fi
  echo "$want" > "$VENV/.memfold-stamp"
}
