#!/usr/bin/env bash
# Install the real agent CLIs from npm into a cache, for the agents' end-to-end tests
# (tests/agents/) — never globally, never into the project. The one place their
# versions are pinned: the tests prove the hook contract of these releases.
#
#   scripts/install-agents.sh AGENT...          install; print each binary's path, one a line
#   scripts/install-agents.sh --check AGENT...  exit 0 when each pinned version is installed
#   scripts/install-agents.sh --versions        print "agent package version" for every agent
#
# AGENT is codex, copilot, gemini, opencode or claude-code-acp (or `all`). Each goes to
# ${XDG_CACHE_HOME:-~/.cache}/agent-console/<agent> (AGENT_CONSOLE_AGENTS_CACHE moves the
# parent). Quiet and quick when the version is already there. Exit codes: 0 installed,
# 2 unknown agent, 3 no npm here, 4 npm failed (its output on stderr).
set -euo pipefail

# agent  npm package  version  binary (under node_modules/.bin)
PINS="
codex            @openai/codex                   0.171.0  codex
copilot          @github/copilot                 1.0.102  copilot
gemini           @google/gemini-cli              0.61.0   gemini
opencode         opencode-ai                     1.18.33  opencode
claude-code-acp  @zed-industries/claude-code-acp 0.16.2   claude-code-acp
"

cache=${AGENT_CONSOLE_AGENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-console}

pin() { # agent -> "package version binary", or exit 2
  local line
  line=$(printf '%s\n' "$PINS" | awk -v a="$1" '$1 == a { print $2, $3, $4 }')
  if [ -z "$line" ]; then
    echo "unknown agent '$1': one of $(printf '%s\n' "$PINS" | awk 'NF { printf "%s ", $1 }')" >&2
    exit 2
  fi
  printf '%s\n' "$line"
}

installed_version() { # agent package -> version, or fail
  local manifest=$cache/$1/node_modules/$2/package.json
  [ -f "$manifest" ] || return 1
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

install_one() {
  local agent=$1 package version binary path
  read -r package version binary <<<"$(pin "$agent")"
  path=$cache/$agent/node_modules/.bin/$binary
  if [ -x "$path" ] && [ "$(installed_version "$agent" "$package" || true)" = "$version" ]; then
    printf '%s\n' "$path"
    return 0
  fi
  if ! command -v npm >/dev/null; then
    echo "npm not found: install Node.js and npm (Debian: apt-get install npm; ./dev does it)" >&2
    exit 3
  fi
  mkdir -p "$cache/$agent"
  local log
  if ! log=$(npm install --prefix "$cache/$agent" --no-fund --no-audit --loglevel=error \
    "$package@$version" 2>&1); then
    printf 'npm install %s@%s failed:\n%s\n' "$package" "$version" "$log" >&2
    exit 4
  fi
  if [ ! -x "$path" ] || [ "$(installed_version "$agent" "$package" || true)" != "$version" ]; then
    echo "npm installed something, but not $package $version at $path" >&2
    exit 4
  fi
  printf '%s\n' "$path"
}

agents=()
mode=install
for arg in "$@"; do
  case $arg in
    --check) mode=check ;;
    --versions) mode=versions ;;
    all) read -r -a all <<<"$(printf '%s\n' "$PINS" | awk 'NF { printf "%s ", $1 }')"; agents+=("${all[@]}") ;;
    *) pin "$arg" >/dev/null; agents+=("$arg") ;;
  esac
done

case $mode in
  versions)
    printf '%s\n' "$PINS" | awk 'NF { print $1, $2, $3 }'
    ;;
  check)
    for agent in "${agents[@]}"; do
      read -r package version binary <<<"$(pin "$agent")"
      [ -x "$cache/$agent/node_modules/.bin/$binary" ] || exit 1
      [ "$(installed_version "$agent" "$package" || true)" = "$version" ] || exit 1
    done
    ;;
  install)
    [ ${#agents[@]} -gt 0 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
    for agent in "${agents[@]}"; do install_one "$agent"; done
    ;;
esac
