#!/usr/bin/env bash
# Install the real Claude Code CLI from npm into a cache, for the end-to-end tests
# (tests/adapters/test_claude_code_e2e.py) — never globally, never into the project.
#
#   scripts/install-claude-code.sh           installs; prints the path of the `claude` binary
#   scripts/install-claude-code.sh --check   exit 0 when that version is already installed
#
# The version is pinned (CLAUDE_CODE_VERSION overrides it) so that the hook contract the
# tests prove is the one of a known release. Quiet and quick when that version is already
# there. Exit codes: 0 installed (path on stdout), 3 no npm here, 4 npm failed (its
# output on stderr; usually: the npm registry is unreachable).
set -euo pipefail

version=${CLAUDE_CODE_VERSION:-2.1.332}
prefix=${CLAUDE_CODE_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-console/claude-code}
binary=$prefix/node_modules/.bin/claude
manifest=$prefix/node_modules/@anthropic-ai/claude-code/package.json

installed_version() {
  [ -x "$binary" ] && [ -f "$manifest" ] || return 1
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

if [ "${1:-}" = --check ]; then
  [ "$(installed_version || true)" = "$version" ]
  exit
fi
if [ "$(installed_version || true)" = "$version" ]; then
  printf '%s\n' "$binary"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "npm not found: install Node.js and npm (Debian: apt-get install npm; ./dev does it)" >&2
  exit 3
fi
mkdir -p "$prefix"
if ! log=$(npm install --prefix "$prefix" --no-fund --no-audit --loglevel=error \
  "@anthropic-ai/claude-code@$version" 2>&1); then
  printf 'npm install @anthropic-ai/claude-code@%s failed:\n%s\n' "$version" "$log" >&2
  exit 4
fi
if [ "$(installed_version || true)" != "$version" ]; then
  echo "npm installed something, but not Claude Code $version at $binary" >&2
  exit 4
fi
printf '%s\n' "$binary"
