#!/usr/bin/env bash
# Write constraints.txt: the exact versions of every package agent-console and its tests
# install, resolved in a fresh virtualenv. ./dev installs with it (pip -c), so CI, the
# demo and a laptop run the same Textual the SVG snapshots were made with.
#
#   scripts/lock.sh          re-resolve from pyproject.toml's ranges and rewrite the file
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip >/dev/null
"$work/venv/bin/python" -m pip install -q -e '.[test]' >/dev/null
{
  echo "# Exact versions for ./dev's installs (pip -c constraints.txt); made by scripts/lock.sh."
  "$work/venv/bin/python" -m pip freeze --exclude-editable | grep -v '^agent-console'
} > constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages"
