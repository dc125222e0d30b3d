"""The Claude Code hook must not fail open.

Claude Code runs the hook's command through the shell and runs the tool unless the hook
exits 0 with a decision or exits 2, or when the hook outlives its timeout. Each test
runs the command line that `hook install` writes, through ``sh -c`` with the hook JSON
on stdin, exactly as Claude Code does, and checks that Claude Code would block.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from support.daemon import short_tmp, workspace

from console.adapters.claude_code.install import hook_command, run_command


def bash_call(ws: Path, command: str = "rm -rf ./*") -> dict:
    return {
        "session_id": "s",
        "transcript_path": "/dev/null",
        "cwd": str(ws),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def env_for(ws: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(ws.parent), "CLAUDE_PROJECT_DIR": str(ws), **extra}


def claude_code_would_block(run) -> bool:
    return run.exit_code == 2 or (run.exit_code == 0 and run.decision == "deny")


def test_stalled_daemon_is_answered_deny_within_timeout_plus_one_second(daemon):
    ws = workspace()
    timeout_s = 2.0
    command = hook_command(daemon.state_dir, timeout_s)
    daemon.proc.send_signal(signal.SIGSTOP)  # connect still succeeds (the kernel's backlog); nothing answers
    try:
        started = time.monotonic()
        run = run_command(command, bash_call(ws), timeout_s=60, env=env_for(ws))
        elapsed = time.monotonic() - started
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
    assert claude_code_would_block(run), run
    # The bound: one deadline across connect, hello and submit, not timeout + 10 s per call.
    assert elapsed < timeout_s + 1, f"the hook took {elapsed:.2f} s"


def test_missing_interpreter_blocks_instead_of_exit_127():
    ws = workspace()
    command = hook_command(short_tmp(), 5, python="/nonexistent/agent-console/python")
    run = run_command(command, bash_call(ws), timeout_s=30, env=env_for(ws))
    assert run.exit_code == 2, run


def test_bare_command_not_on_path_would_have_run_the_tool():
    """What the old documented command did: exit 127, which Claude Code treats as go-ahead."""
    ws = workspace()
    run = run_command("agent-console hook claude-code", bash_call(ws), timeout_s=30, env=env_for(ws))
    assert run.exit_code == 127 and not claude_code_would_block(run)


def test_non_executable_interpreter_blocks_instead_of_exit_126():
    ws = workspace()
    fake = short_tmp() / "python"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o644)
    run = run_command(
        hook_command(short_tmp(), 5, python=str(fake)), bash_call(ws), timeout_s=30, env=env_for(ws)
    )
    assert run.exit_code == 2, run


def broken_console_package() -> Path:
    root = short_tmp("broken-")
    (root / "console").mkdir()
    (root / "console" / "__init__.py").write_text("raise ImportError('half-upgraded install')\n")
    (root / "console" / "__main__.py").write_text("")
    return root


def test_crash_on_import_blocks_instead_of_exit_1(daemon):
    """A broken install (a console package that cannot be imported) exits 1 with a
    traceback; `|| exit 2` turns that into a block."""
    ws = workspace()
    broken = broken_console_package()
    # Not isolated and without site-packages, so PYTHONPATH's broken package is the one found.
    command = hook_command(daemon.state_dir, 5).replace(" -I ", " -S ", 1)
    run = run_command(
        command, bash_call(ws), timeout_s=30, env=env_for(ws, PYTHONPATH=str(broken)), cwd=str(broken)
    )
    assert run.exit_code == 2 and "half-upgraded install" in run.stderr, run


def test_installed_command_ignores_pythonpath_and_a_console_folder_in_the_project(daemon):
    """The installed command runs isolated (-I): neither PYTHONPATH nor a console/ package
    in the project (the cwd) can replace the hook; it still answers from agent-console."""
    ws = workspace()
    hijack = ws / "console"
    hijack.mkdir()
    (hijack / "__init__.py").write_text("")
    (hijack / "__main__.py").write_text("print('{}'); raise SystemExit(0)\n")
    target = daemon.state_dir / "operator.token"
    read = {**bash_call(ws), "tool_name": "Read", "tool_input": {"file_path": str(target)}}
    run = run_command(
        hook_command(daemon.state_dir, 5),
        read,
        timeout_s=30,
        env=env_for(ws, PYTHONPATH=str(broken_console_package())),
        cwd=str(ws),
    )
    assert run.exit_code == 0 and run.decision == "deny", run


def test_a_hook_that_cannot_write_its_answer_blocks(daemon):
    ws = workspace()
    command = hook_command(daemon.state_dir, 5).replace(" || exit 2", " >&- || exit 2")
    run = run_command(
        command,
        {
            **bash_call(ws),
            "tool_name": "Read",
            "tool_input": {"file_path": str(daemon.state_dir / "operator.token")},
        },
        timeout_s=30,
        env=env_for(ws),
    )
    assert run.exit_code == 2, run


def test_daemon_down_denies(tmp_path):
    ws = workspace()
    run = run_command(hook_command(tmp_path / "none", 5), bash_call(ws), timeout_s=30, env=env_for(ws))
    assert run.exit_code == 0 and run.decision == "deny"


def test_the_hook_uses_this_interpreter_by_absolute_path():
    command = hook_command(Path("/tmp/x y"), 5)
    assert command.startswith(sys.executable + " -I -m console hook claude-code")
    assert "'/tmp/x y'" in command and command.endswith(" || exit 2")
    assert os.path.isabs(command.split()[0])
    json.dumps(command)
