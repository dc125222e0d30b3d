"""`agent-console hook AGENT|install|doctor`: each agent's hook, installed so it cannot
fail open, and a check of what the agent would do with it (docs/claude-code.md,
docs/agents.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from console.cli.common import EXIT_INVALID, CLIError, add_state_dir, locations


def cmd_agent_hook(args: argparse.Namespace) -> int:
    """``agent-console hook AGENT``: the same lean entry ``python -m console hook AGENT`` runs."""
    from console.adapters import hookmain

    argv = [args.hook_command]
    if getattr(args, "state_dir", None):
        argv += ["--state-dir", str(args.state_dir)]
    if args.timeout is not None:
        argv += ["--timeout", repr(float(args.timeout))]
    return hookmain.main(argv)


def _approval_timeout(args: argparse.Namespace) -> float | None:
    """The daemon's approval_timeout_s, or None when no daemon answers."""
    from console.client import Client, DaemonUnreachable, RPCError
    from console.locations import UnsafeLocation
    from console.protocol.requests import DaemonStatus

    for role in ("operator", "agent"):
        try:
            with Client.connect(
                locations(args), role=role, client="agent-console-hook", deadline=time.monotonic() + 5
            ) as client:
                status = client.request(DaemonStatus())
        except (DaemonUnreachable, RPCError, UnsafeLocation, OSError):
            continue
        # agent.sock says it on its own (and in its policy facts); operator.sock within
        # the whole policy.
        policy = status.policy
        for value in (
            status.approval_timeout_s,
            policy.approval_timeout_s,
            policy.config.approval_timeout_s if policy.config else None,
        ):
            if isinstance(value, int | float):
                return float(value)
    return None


def _settings_file(args: argparse.Namespace) -> Path:
    from console.adapters.claude_code.install import settings_path

    if args.settings:
        return Path(args.settings).expanduser().absolute()
    return settings_path("project" if args.project else "user")


def _agent_module(agent: str) -> ModuleType:
    import importlib

    return importlib.import_module(f"console.adapters.{agent.replace('-', '_')}.install")


def cmd_install(args: argparse.Namespace) -> int:
    from console.adapters import installing
    from console.adapters.claude_code import install as inst
    from console.adapters.installing import SettingsError

    loc = locations(args)
    approval = _approval_timeout(args)
    timeout_s = args.timeout if args.timeout is not None else (approval or 300.0)
    if timeout_s <= 0 or timeout_s > 86400:
        raise CLIError("--timeout: use a number of seconds between 0 and 86400", EXIT_INVALID)
    if args.agent != "claude-code":
        try:
            lines = _agent_module(args.agent).install(
                state_dir=loc.state_dir, timeout_s=timeout_s, home=args.config_dir, binary=args.binary
            )
        except SettingsError as exc:
            raise CLIError(str(exc), EXIT_INVALID) from None
        except OSError as exc:
            raise CLIError(
                f"cannot install the {args.agent} hook: {exc.strerror or exc}", EXIT_INVALID
            ) from None
        print("\n".join(lines))
        if approval is None:
            print("  note: no daemon answers now; until one runs, every supervised call is denied")
        print(f"check it any time: agent-console hook doctor {args.agent}")
        return 0
    path = _settings_file(args)
    command = inst.hook_command(loc.state_dir, timeout_s)
    hook_timeout = inst.hook_timeout_for(timeout_s)
    try:
        merged = inst.merge(
            inst.read_settings(path), command, hook_timeout, attention=inst.attention_command(loc.state_dir)
        )
        backup = inst.write_settings(path, merged)
    except installing.SettingsError as exc:
        raise CLIError(str(exc), EXIT_INVALID) from None
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}", EXIT_INVALID) from None
    print(f"installed the agent-console PreToolUse and PermissionRequest hooks in {path}")
    if backup is not None:
        print(f"  the previous file is kept as {backup}")
    print(f"  command  {command}")
    print(f"  matcher  {inst.MATCHER}")
    print(f"  timeout  {hook_timeout} s (Claude Code's), --timeout {timeout_s:g} s (the hook's)")
    print(
        f"  and the {', '.join(inst.ATTENTION_EVENTS)} hooks (who waits for you; they only inform, "
        f"so no '|| exit 2'), timeout {inst.ATTENTION_TIMEOUT_S} s"
    )
    root = installing.source_checkout(sys.executable)
    if root is not None:
        print(f"  note: {installing.checkout_warning('the hook', root)}")
    if approval is None:
        print("  note: no daemon answers now; until one runs, every supervised call is denied")
    elif timeout_s > approval:
        print(
            f"  note: the daemon's approval_timeout_s is {approval:g} s, below --timeout: requests are denied "
            f"(approval_timeout) after {approval:g} s. Raise approval_timeout_s in the policy or lower --timeout"
        )
    print("check it any time: agent-console hook doctor" + (f" --settings {path}" if args.settings else ""))
    return 0


def _doctor_files(args: argparse.Namespace) -> list[Path]:
    if args.settings:
        return [Path(s).expanduser().absolute() for s in args.settings]
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or Path.cwd())
    return [
        Path("/etc/claude-code/managed-settings.json"),
        Path.home() / ".claude" / "settings.json",
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
    ]


def _report(checks: list[Any]) -> int:
    risks = sum(check.level == "risk" for check in checks)
    problems = sum(check.level == "problem" for check in checks)
    for check in checks:
        print(f"  {check.level.upper():<7} {check.message}")
    print(f"{risks} fail-open risk(s) found" if risks else "no fail-open risk found")
    if problems:
        print(f"{problems} other problem(s): supervised calls are denied meanwhile")
    return 1 if risks or problems else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from console.adapters import installing
    from console.adapters.claude_code import install as inst

    loc = locations(args)
    if args.agent != "claude-code":
        approval = _approval_timeout(args)
        found: list[installing.Check] = _agent_module(args.agent).doctor(
            state_dir=loc.state_dir, home=args.config_dir, binary=args.binary, approval=approval
        )
        if approval is None:
            found.append(
                installing.Check(
                    "problem",
                    f"no daemon answers for {loc.state_dir}: every supervised call is denied until one runs "
                    "(start one: agent-console daemon start)",
                )
            )
        print(f"agent-console hook doctor {args.agent}")
        return _report(found)
    files: list[tuple[Path, dict[str, Any]]] = []
    checks: list[installing.Check] = []
    for path in _doctor_files(args):
        try:
            settings = inst.read_settings(path)
        except installing.SettingsError as exc:
            checks.append(installing.Check("risk", str(exc)))
            continue
        if path.exists():
            files.append((path, settings))
    if args.settings and not files and not checks:
        raise CLIError(f"no settings file at {', '.join(args.settings)}", EXIT_INVALID)
    approval = _approval_timeout(args)
    checks.extend(inst.diagnose(files, approval))
    if approval is None:
        checks.append(
            installing.Check(
                "problem",
                f"no daemon answers for {loc.state_dir}: every supervised call is denied until one runs "
                "(start one: agent-console daemon start)",
            )
        )
    for hook in inst.installed_hooks(files):
        parsed = installing.parse_command(hook.command)
        target = Path(parsed.state_dir or loc.state_dir) / "operator.token"
        run = inst.run_command(hook.command, inst.sample_input(Path.cwd(), target), hook.timeout)
        what = f"ran {hook.file}'s hook on a Read of {target} ({run.seconds:.1f} s): {run.verdict()}"
        checks.append(installing.Check("ok" if run.blocks else "risk", what))
    print("agent-console hook doctor")
    print("  settings read: " + (", ".join(str(p) for p, _ in files) or "none"))
    return _report(checks)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hook",
        help="hooks for existing agents (Claude Code, Codex, Copilot CLI, Gemini CLI, OpenCode): "
        "the hook, install, doctor",
    )
    hsub = p.add_subparsers(dest="hook_command", metavar="ACTION", required=True)
    q = hsub.add_parser(
        "claude-code",
        help="Claude Code hook: reads the hook JSON on stdin, prints the decision (PreToolUse, "
        "PermissionRequest) or tells the console who waits for you (Notification, Stop, UserPromptSubmit)",
        description="Maps Bash, Write, Edit, MultiEdit and NotebookEdit calls to operations, waits for the "
        "console's decision and prints Claude Code's hookSpecificOutput; denies a Read, Glob or Grep of "
        "agent-console's state or a protected secret. Notification, Stop and UserPromptSubmit set the "
        "agent's attention state (waiting for you, done, working) and print nothing. Other tools and events "
        "get no answer. Any failure "
        "answers deny, and the whole hook ends within --timeout + 1 s. Install it with "
        "`agent-console hook install claude-code` (see docs/claude-code.md).",
    )
    add_state_dir(q)
    q.add_argument(
        "--timeout",
        type=float,
        default=55.0,
        metavar="S",
        help="deny if the operator has not decided within S seconds of the hook starting "
        "(keep it below Claude Code's hook timeout; default 55)",
    )
    q.set_defaults(func=cmd_agent_hook)
    for agent, what in HOOK_AGENTS.items():
        q = hsub.add_parser(agent, help=f"{what} hook: reads the call on stdin, prints the decision")
        add_state_dir(q)
        q.add_argument(
            "--timeout", type=float, metavar="S", help="deny if undecided within S seconds (default 55)"
        )
        q.set_defaults(func=cmd_agent_hook)

    q = hsub.add_parser(
        "install",
        help="merge the hook into Claude Code's settings.json, so that it cannot fail open",
        description="Adds the agent-console PreToolUse hook to Claude Code's settings (other keys and hooks "
        "are kept; running it again replaces the earlier install; the old file is kept as "
        "<file>.agent-console.bak). The command is the absolute path of this Python, run isolated, with "
        "' || exit 2' so a missing or broken install blocks, and Claude Code's timeout is --timeout + 10 s.",
    )
    q.add_argument("agent", choices=["claude-code", *HOOK_AGENTS])
    add_state_dir(q)
    where = q.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="~/.claude/settings.json (the default)")
    where.add_argument("--project", action="store_true", help="./.claude/settings.json")
    where.add_argument("--settings", metavar="FILE", help="this settings file")
    q.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="the hook's --timeout (default: the daemon's approval_timeout_s, else 300)",
    )
    _agent_options(q)
    q.set_defaults(func=cmd_install)

    q = hsub.add_parser(
        "doctor",
        help="check Claude Code's settings for every way the hook could fail open, and run it",
        description="Reads the managed, user, project and local settings (or --settings FILE), reports each "
        "fail-open risk (a command found through PATH, no '|| exit 2', a timeout too short, disableAllHooks, "
        "a supervised tool without the hook, no daemon) and runs each installed hook command as Claude Code "
        "would, on a sample PreToolUse call. Exit 0 when nothing is wrong, 1 when a fail-open risk or "
        "another problem (no daemon: everything is denied) is found.",
    )
    q.add_argument("agent", nargs="?", default="claude-code", choices=["claude-code", *HOOK_AGENTS])
    add_state_dir(q)
    q.add_argument(
        "--settings", metavar="FILE", action="append", help="check this file (repeatable; Claude Code)"
    )
    _agent_options(q)
    q.set_defaults(func=cmd_doctor)


# The agents besides Claude Code whose hooks agent-console installs (docs/agents.md).
HOOK_AGENTS = {"codex": "Codex", "copilot": "Copilot CLI", "gemini": "Gemini CLI", "opencode": "OpenCode"}


def _agent_options(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--config-dir",
        metavar="DIR",
        help="the agent's configuration directory (Codex: $CODEX_HOME or ~/.codex; Gemini: ~/.gemini; "
        "Copilot: $COPILOT_HOME or ~/.copilot; OpenCode: ~/.config/opencode)",
    )
    q.add_argument(
        "--binary", metavar="PATH", help="the agent's CLI (Codex: to ask it to trust the hook; default: PATH)"
    )
