"""Installing the Codex hook so that it cannot fail open, and checking an install.

Codex (0.171) reads hooks from ``$CODEX_HOME/hooks.json`` (``~/.codex``) and
``config.toml``; it runs the tool when a hook exits 1, prints what is not JSON or outlives
its ``timeout``, and blocks on exit 2 only when stderr gives a reason. So the installed
hook is :func:`console.adapters.installing.hook_command` (absolute interpreter, ``-I``,
``--state-dir``, ``--timeout``, a tail that turns a broken install into exit 2 with a
reason) with Codex's ``timeout`` ``--timeout`` + 10 s.

**Trust.** Codex silently skips a hook whose definition it has not been told to trust
(``trustStatus`` ``untrusted``, or ``modified`` once the definition changes): the tool
then runs unsupervised. Trust is a ``trusted_hash`` under ``[hooks.state."<key>"]`` in
``config.toml``, the hash Codex itself computes of the definition. The installer asks
Codex for it (``codex app-server``, ``hooks/list``), writes it in a marked block of
``config.toml``, and asks again to check that Codex now says ``trusted``; ``hook
doctor codex`` asks the same. What no configuration closes: an edit of the hook makes
Codex skip it without a word until it is trusted again (the doctor sees it), and input
written into a running interactive shell (``write_stdin``) never reaches a hook.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from console.adapters import installing
from console.adapters.installing import Check, SettingsError

AGENT = "codex"
MATCHER = "Bash|apply_patch|mcp__.*"
EVENT = "PreToolUse"
TRUST_BEGIN = "# >>> agent-console: trust for its Codex hook (agent-console hook install codex)"
TRUST_END = "# <<< agent-console"
APP_SERVER_TIMEOUT_S = 30.0
OPEN_MODES = (
    "Codex skips an untrusted or edited hook without a word, and input typed into a running "
    "interactive shell (write_stdin) never reaches a hook: the safe way is agent-console run -- codex"
)


def codex_home(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser().absolute()


def find_codex(explicit: str | None = None) -> str | None:
    return explicit or shutil.which("codex")


# The events that only inform the console who waits for the person (console/adapters/
# attention.py): their command has no blocking tail (exit 2 from Stop would make Codex go
# on, from PermissionRequest deny the call) and a short timeout; they gate nothing.
ATTENTION_EVENTS = ("UserPromptSubmit", "Stop", "PermissionRequest")
ATTENTION_TIMEOUT_S = 10


def attention_command(state_dir: Path, python: str | None = None) -> str:
    import shlex
    import sys

    python = python or sys.executable
    # `|| exit 0`: a broken install costs the "who waits" mark, never the agent's turn (a
    # failing BeforeAgent stops Gemini CLI's prompt; exit 2 from Codex's Stop makes it go on).
    return f"{shlex.quote(python)} -I -m console hook {AGENT} --state-dir {shlex.quote(str(state_dir))} || exit 0"


def merge(
    settings: dict[str, Any], command: str, timeout: int, attention: str | None = None
) -> dict[str, Any]:
    """``settings`` (hooks.json) with our PreToolUse hook (and, given ``attention``, our
    attention hooks) in place of any earlier ones."""
    group = {"matcher": MATCHER, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}
    out = installing.merge_group(settings, EVENT, group, AGENT, "hooks.json")
    for event in ATTENTION_EVENTS if attention is not None else ():
        hook = {"type": "command", "command": attention, "timeout": ATTENTION_TIMEOUT_S}
        out = installing.merge_group(out, event, {"hooks": [hook]}, AGENT, "hooks.json")
    return out


def _command(hook: Any) -> str:
    return str(hook.get("command", "")) if isinstance(hook, dict) else ""


def installed(settings: dict[str, Any]) -> list[tuple[str, str, float | None]]:
    """(matcher, command, timeout) of each agent-console PreToolUse hook."""
    found = []
    hooks = settings.get("hooks")
    groups = hooks.get(EVENT) if isinstance(hooks, dict) else None
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        for hook in group.get("hooks") or []:
            if installing.is_ours(_command(hook), AGENT):
                raw = hook.get("timeout")
                timeout = float(raw) if isinstance(raw, int | float) else None
                found.append((str(group.get("matcher", "")), _command(hook), timeout))
    return found


# ---------------------------------------------------------------------------------------
# Trust, through Codex's own app-server


def hooks_list(codex: str, home: Path, cwd: Path) -> list[dict[str, Any]]:
    """Codex's ``hooks/list`` for ``cwd``: each hook with its key, currentHash, trustStatus."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "agent-console", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    env = {**os.environ, "CODEX_HOME": str(home)}
    proc = subprocess.Popen(
        [codex, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(cwd),
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())
        proc.stdin.flush()
        for msg in _messages(proc.stdout.fileno(), APP_SERVER_TIMEOUT_S):
            if msg.get("id") == 2:
                if "error" in msg:
                    raise SettingsError(f"codex app-server refused hooks/list: {msg['error']}")
                data = msg["result"]["data"]
                return [h for entry in data for h in entry.get("hooks", [])]
        raise SettingsError(f"codex app-server did not list its hooks within {APP_SERVER_TIMEOUT_S:g} s")
    finally:
        proc.kill()
        proc.wait()


def _messages(fd: int, timeout_s: float) -> Iterator[dict[str, Any]]:
    """The JSON objects written one a line on ``fd`` until it closes or ``timeout_s`` ends
    (read from the descriptor itself: a buffered reader hides lines from select)."""
    import select
    import time

    end = time.monotonic() + timeout_s
    buf = b""
    while True:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict):
                yield msg


def ours(hooks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every agent-console hook Codex lists (the gate and the attention hooks)."""
    return [h for h in hooks if installing.is_ours(h.get("command"), AGENT)]


def with_trust(config_text: str, trust: dict[str, str]) -> str:
    """``config.toml``'s text with our marked block trusting ``trust`` (key -> hash)."""
    text = re.sub(
        rf"\n?{re.escape(TRUST_BEGIN)}\n.*?{re.escape(TRUST_END)}\n?", "\n", config_text, flags=re.DOTALL
    )
    try:
        existing = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config.toml is not valid TOML ({exc}); fix it first") from None
    state = existing.get("hooks", {}).get("state", {}) if isinstance(existing.get("hooks"), dict) else {}
    lines = []
    for key, digest in trust.items():
        if key in state:
            if isinstance(state[key], dict) and state[key].get("trusted_hash") == digest:
                continue
            raise SettingsError(
                f"config.toml already has [hooks.state.{json.dumps(key)}] with another hash; remove that table "
                "and install again"
            )
        lines += [f"[hooks.state.{json.dumps(key)}]", f"trusted_hash = {json.dumps(digest)}"]
    if not lines:
        return text
    block = "\n".join([TRUST_BEGIN, *lines, TRUST_END]) + "\n"
    out = text.rstrip("\n") + ("\n\n" if text.strip() else "") + block
    try:
        tomllib.loads(out)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"adding the trust to config.toml would make it invalid ({exc})") from None
    return out


def trust(codex: str, home: Path, cwd: Path) -> list[dict[str, Any]]:
    """Trust our hooks as Codex would after a person approved them; returns Codex's view after."""
    listed = ours(hooks_list(codex, home, cwd))
    if not listed:
        raise SettingsError(
            "codex app-server does not list the agent-console hook; is hooks.json in CODEX_HOME?"
        )
    config = home / "config.toml"
    try:
        text = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    wanted = {str(h["key"]): str(h["currentHash"]) for h in listed}
    new = with_trust(text, wanted)
    if new != text:
        installing.write_atomic(config, new)
    return ours(hooks_list(codex, home, cwd))


def trust_checks(codex: str | None, home: Path, cwd: Path) -> list[Check]:
    if codex is None:
        return [
            Check(
                "risk",
                "codex is not on PATH (give --binary PATH): cannot ask Codex whether it trusts the hook; an "
                "untrusted hook is skipped without a word",
            )
        ]
    try:
        listed = ours(hooks_list(codex, home, cwd))
    except (SettingsError, OSError) as exc:
        return [Check("risk", f"cannot ask Codex about its hooks: {exc}")]
    if not listed:
        return [
            Check(
                "risk",
                "Codex lists no agent-console PreToolUse hook: reinstall: agent-console hook install codex",
            )
        ]
    out = []
    for hook in listed:
        status = hook.get("trustStatus")
        if not hook.get("enabled", True):
            out.append(Check("risk", f"Codex has the hook {hook.get('key')} disabled: it does not run"))
        elif status != "trusted" and not hook.get("isManaged"):
            out.append(
                Check(
                    "risk",
                    f"Codex says the hook {hook.get('key')} is {status}: it SKIPS it and runs every tool "
                    "unsupervised. Trust it again: agent-console hook install codex",
                )
            )
        else:
            out.append(
                Check(
                    "ok",
                    f"Codex trusts the hook {hook.get('key')} ({'managed' if hook.get('isManaged') else status})",
                )
            )
    return out


def sample_input(cwd: Path, target: Path) -> dict[str, Any]:
    """A call the hook denies without the operator: a patch writing the operator token."""
    return {
        "session_id": "agent-console-doctor",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch",
        "tool_input": {"command": f"*** Begin Patch\n*** Add File: {target}\n+x\n*** End Patch\n"},
    }


def verdict(run: installing.Ran) -> tuple[bool, str]:
    """(Codex blocks the call, what Codex does with this run)."""
    if run.exit_code is None:
        return False, "Codex kills the hook at its timeout and RUNS the tool"
    if run.exit_code == 2:
        if run.stderr.strip():
            return True, "exit 2 with a reason: Codex blocks the tool"
        return False, "exit 2 without a reason on stderr: Codex RUNS the tool"
    if run.exit_code != 0:
        return False, f"exit {run.exit_code}: Codex RUNS the tool"
    try:
        decision = json.loads(run.stdout)["hookSpecificOutput"]["permissionDecision"]
    except (ValueError, KeyError, TypeError):
        return False, "exit 0 without a decision: Codex RUNS the tool"
    return decision == "deny", f"exit 0 with permissionDecision {decision!r}"


# ---------------------------------------------------------------------------------------
# What `hook install codex` and `hook doctor codex` do


def install(
    *, state_dir: Path, timeout_s: float, home: str | None, binary: str | None, python: str | None = None
) -> list[str]:
    """Write the hook, have Codex trust it, and say what was done. ``python`` replaces this
    interpreter in the command (the tests install a broken one to prove the tail blocks)."""
    where = codex_home(home)
    path = where / "hooks.json"
    command = installing.hook_command(AGENT, state_dir, timeout_s, python)
    timeout = installing.agent_timeout_for(timeout_s)
    merged = merge(installing.read_json(path), command, timeout, attention_command(state_dir, python))
    backup = installing.write_json(path, merged)
    lines = [f"installed the agent-console PreToolUse hook in {path}"]
    if backup is not None:
        lines.append(f"  the previous file is kept as {backup}")
    lines += [
        f"  command  {command}",
        f"  matcher  {MATCHER}",
        f"  timeout  {timeout} s (Codex's), --timeout {installing.seconds(timeout_s)} s (the hook's)",
        f"  and the {', '.join(ATTENTION_EVENTS)} hooks (who waits for you; they only inform), "
        f"timeout {ATTENTION_TIMEOUT_S} s",
    ]
    codex = find_codex(binary)
    if codex is None:
        raise SettingsError(
            f"wrote {path}, but codex is not on PATH to ask it to trust the hook, and until Codex trusts "
            "it Codex skips it: run this again with --binary PATH/TO/codex (or trust it in Codex: /hooks)"
        )
    after = trust(codex, where, Path.cwd())
    states = sorted({str(h.get("trustStatus")) for h in after})
    lines.append(f"  trust    written to {where / 'config.toml'}; Codex now says: {', '.join(states)}")
    if states != ["trusted"]:
        raise SettingsError(f"Codex does not trust the hook after install ({', '.join(states)})")
    return lines


def doctor(*, state_dir: Path, home: str | None, binary: str | None, approval: float | None) -> list[Check]:
    where = codex_home(home)
    path = where / "hooks.json"
    try:
        settings = installing.read_json(path)
    except SettingsError as exc:
        return [Check("risk", str(exc))]
    found = installed(settings)
    if not found:
        return [Check("risk", f"no agent-console hook in {path}: run agent-console hook install codex")]
    checks: list[Check] = []
    for matcher, command, timeout in found:
        checks += installing.command_checks(str(path), command, AGENT)
        checks += installing.timeout_checks(str(path), command, timeout, "Codex")
        for tool in ("Bash", "apply_patch", "mcp__server__tool"):
            if not installing.matches(matcher, tool):
                checks.append(Check("risk", f"{path}: the matcher {matcher!r} leaves {tool} unsupervised"))
    checks += trust_checks(find_codex(binary), where, Path.cwd())
    for _, command, timeout in found:
        target = state_dir / "operator.token"
        sample = json.dumps(sample_input(Path.cwd(), target))
        run = installing.run_command(command, sample, timeout or 600.0)
        blocks, what = verdict(run)
        checks.append(
            Check(
                "ok" if blocks else "risk",
                f"ran the hook on a patch of {target} ({run.seconds:.1f} s): {what}",
            )
        )
    checks.append(Check("open", OPEN_MODES))
    return checks
