"""The agents' hooks without their CLIs: each agent's input becomes the one request model,
each installer writes a configuration that cannot fail open, and the hook process stays
lean. (tests/agents/ drives the real CLIs.)"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tomllib

import msgspec
import pytest
from support.daemon import short_tmp, workspace

from console.adapters import calls, gate, installing
from console.adapters.codex import hook as codex_hook
from console.adapters.codex import install as codex_install
from console.adapters.codex import patch
from console.adapters.copilot import hook as copilot_hook
from console.adapters.gemini import hook as gemini_hook
from console.adapters.gemini import install as gemini_install
from console.adapters.opencode import hook as opencode_hook
from console.adapters.opencode import install as opencode_install
from console.protocol.procs import ProcStat, _launcher
from console.protocol.requests import MAX_HELD_COMMAND
from console.protocol.results import OperationDecision

# ------------------------------------------------------------------ the request model


def test_each_agents_shell_call_is_the_same_sandboxed_request():
    ws = str(workspace())
    env = {"GEMINI_PROJECT_DIR": ws}
    ops = {
        "codex": codex_hook.operations_for(
            {"tool_name": "Bash", "tool_input": {"command": "make"}, "cwd": ws, "session_id": "s"}, None
        )[0],
        "gemini": gemini_hook.operation_for(
            {
                "tool_name": "run_shell_command",
                "tool_input": {"command": "make"},
                "cwd": ws,
                "session_id": "s",
            },
            None,
            env,
        ),
        "copilot": copilot_hook.operation_for(
            {"toolName": "bash", "toolArgs": {"command": "make"}, "cwd": ws, "sessionId": "s"}, None, {}
        ),
        "opencode": opencode_hook.operation_for(
            {
                "tool_name": "bash",
                "tool_input": {"command": "make"},
                "cwd": ws,
                "session_id": "s",
                "project": ws,
            },
            None,
        ),
    }
    for agent, op in ops.items():
        assert op is not None
        assert op["tool"].startswith(f"{agent}:"), op
        assert (op["kind"], op["executable"], op["args"]) == ("shell", "bash", ["-c", "make"]), op
        assert (op["network"], op["write_dirs"], op["session_id"]) == ("none", [], "s"), op
        assert "capabilities" not in op, op  # sandboxed: within the ceiling


def test_an_escalation_line_asks_for_network_for_every_agent():
    ws = str(workspace())
    op = codex_hook.operations_for(
        {"tool_name": "Bash", "tool_input": {"command": "# agent-console: network\ncurl x"}, "cwd": ws}, None
    )[0]
    assert op["network"] == "any"
    with pytest.raises(calls.Refused, match="Codex has no per-call flag"):
        codex_hook.operations_for(
            {"tool_name": "Bash", "tool_input": {"command": "# agent-console: root\nx"}, "cwd": ws}, None
        )


def test_a_codex_patch_becomes_one_write_per_file_with_what_it_will_hold():
    ws = workspace()
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    text = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n three\n"
        "*** Add File: b.txt\n+new\n*** Delete File: README.md\n*** End Patch\n"
    )
    ops = codex_hook.operations_for(
        {"tool_name": "apply_patch", "tool_input": {"command": text}, "cwd": str(ws)}, str(short_tmp())
    )
    by_path = {op["args"][0]: op for op in ops}
    assert set(by_path) == {str(ws / "a.txt"), str(ws / "b.txt"), str(ws / "README.md")}
    for path, content in (
        (ws / "a.txt", b"one\nTWO\nthree\n"),
        (ws / "b.txt", b"new\n"),
        (ws / "README.md", b""),
    ):
        op = by_path[str(path)]
        assert op["args"][1] == "sha256:" + hashlib.sha256(content).hexdigest()
        assert base64.b64decode(op.get("stdin", "")) == content
        assert op["capabilities"] == [{"kind": "workspace_write", "scope": str(path)}]


def test_a_patch_whose_hunk_is_not_in_the_file_binds_the_patch_text():
    ws = workspace()
    (ws / "a.txt").write_text("one\n")
    text = "*** Begin Patch\n*** Update File: a.txt\n@@\n-absent\n+x\n*** End Patch\n"
    [op] = codex_hook.operations_for(
        {"tool_name": "apply_patch", "tool_input": {"command": text}, "cwd": str(ws)}, str(short_tmp())
    )
    assert "stdin" not in op and op["args"][1] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert "-absent" in op["justification"]


def test_a_malformed_patch_is_denied():
    with pytest.raises(patch.PatchError):
        patch.parse("*** Update File: x\n")


def test_a_write_of_agent_consoles_state_is_refused_by_every_hook(tmp_path):
    state = short_tmp()
    token = state / "operator.token"
    ws = str(workspace())
    with pytest.raises(calls.Refused):
        gemini_hook.operation_for(
            {"tool_name": "write_file", "tool_input": {"file_path": str(token), "content": "x"}, "cwd": ws},
            str(state),
            {},
        )
    with pytest.raises(calls.Refused):
        copilot_hook.operation_for(
            {"toolName": "create", "toolArgs": {"path": str(token), "file_text": "x"}, "cwd": ws},
            str(state),
            {},
        )
    with pytest.raises(calls.Refused):
        opencode_hook.operation_for(
            {"tool_name": "write", "tool_input": {"filePath": str(token), "content": "x"}, "cwd": ws},
            str(state),
        )


def test_reads_of_secrets_are_refused_and_other_reads_left_to_the_agent(tmp_path):
    ws = str(workspace())
    secret = {"tool_name": "read_file", "tool_input": {"file_path": "/etc/shadow"}, "cwd": ws}
    with pytest.raises(calls.Refused):
        gemini_hook.operation_for(secret, None, {})
    plain = {"tool_name": "read_file", "tool_input": {"file_path": f"{ws}/README.md"}, "cwd": ws}
    assert gemini_hook.operation_for(plain, None, {}) is None
    with pytest.raises(calls.Refused):
        copilot_hook.operation_for(
            {"toolName": "view", "toolArgs": {"path": "/proc/1/environ"}, "cwd": ws}, None, {}
        )


def test_edits_carry_the_files_new_content():
    ws = workspace()
    (ws / "f.py").write_text("x = 1\ny = 2\n")
    op = gemini_hook.operation_for(
        {"tool_name": "replace", "tool_input": {"file_path": "f.py", "old_string": "y = 2", "new_string": "y = 3"},
         "cwd": str(ws)},
        str(short_tmp()),
        {"GEMINI_PROJECT_DIR": str(ws)},
    )  # fmt: skip
    assert op is not None
    assert base64.b64decode(op["stdin"]) == b"x = 1\ny = 3\n"
    op = opencode_hook.operation_for(
        {"tool_name": "edit", "tool_input": {"filePath": str(ws / "f.py"), "oldString": "x = 1", "newString": "x = 0"},
         "cwd": str(ws), "project": "/"},
        str(short_tmp()),
    )  # fmt: skip
    assert op is not None and base64.b64decode(op["stdin"]) == b"x = 0\ny = 2\n"
    assert op["workspace_root"] == str(ws)  # OpenCode's "/" worktree is no project


def test_duplicate_keys_and_nan_in_a_hook_input_are_denied():
    for text in ('{"tool_name": "Bash", "tool_name": "x"}', '{"a": NaN}', "[1]", "{"):
        with pytest.raises(calls.HookInputError):
            calls.load_input(text)


# ------------------------------------------------------------------ answers in each agent's shape


@pytest.mark.parametrize(
    ("module", "payload", "denied"),
    [
        (codex_hook, {"tool_name": "Bash", "tool_input": {"command": "ls"}}, lambda a: a["hookSpecificOutput"]["permissionDecision"] == "deny"),
        (gemini_hook, {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}, lambda a: a["decision"] == "deny"),
        (copilot_hook, {"toolName": "bash", "toolArgs": {"command": "ls"}}, lambda a: a["permissionDecision"] == "deny"),
        (opencode_hook, {"tool_name": "bash", "tool_input": {"command": "ls"}}, lambda a: a["decision"] == "deny"),
    ],
)  # fmt: skip
def test_with_no_daemon_every_hook_denies_in_its_agents_shape(module, payload, denied):
    out = io.StringIO()
    call = {**payload, "cwd": str(workspace()), "project": ""}
    assert (
        module.run_hook(io.StringIO(json.dumps(call)), out, state_dir=str(short_tmp() / "none"), timeout_s=5)
        == 0
    )
    answer = json.loads(out.getvalue())
    assert denied(answer), answer
    assert "unreachable" in json.dumps(answer)


def test_a_bug_inside_any_hook_is_a_deny(monkeypatch):
    for module in (codex_hook, gemini_hook, copilot_hook, opencode_hook):

        def boom(*a, **k):
            raise RuntimeError("bug")

        monkeypatch.setattr(module, "decide", boom)
        out = io.StringIO()
        assert module.run_hook(io.StringIO("{}"), out, state_dir=None) == 0
        assert "deny" in out.getvalue(), module


def test_the_gate_reads_the_decisions_fields_as_the_protocol_declares_them():
    assert set(gate.DECISION_FIELDS) == set(OperationDecision.__struct_fields__)
    assert gate.MAX_HELD_COMMAND == MAX_HELD_COMMAND
    good = {
        "request_id": "r-1", "verdict": "allow", "reason": "", "source": "policy", "scope": "", "fingerprint": "f",
        "note": "", "escalations": [], "authorization": None, "decided_at": 1.0, "latency_ms": 1, "denials": [],
    }  # fmt: skip
    assert gate.decision_problem(good) == ""
    msgspec.convert(good, OperationDecision)
    assert gate.decision_problem({**good, "verdict": "maybe"}) == "decision.verdict"
    assert gate.decision_problem({k: v for k, v in good.items() if k != "source"}) == "decision.source"
    allow = gate.read_answer(good, None, {"kind": "shell"})
    assert not allow.allow and "held no ticket" in allow.reason  # never an allow without the rewrite


# ------------------------------------------------------------------ installers


def test_the_installed_command_blocks_when_the_interpreter_is_missing():
    command = installing.hook_command("gemini", short_tmp(), 10, python="/nonexistent/python3")
    run = installing.run_command(command, "{}", 10)
    assert run.exit_code == 2 and "blocked" in run.stderr


def test_gemini_install_is_idempotent_and_keeps_other_hooks(tmp_path):
    (tmp_path / "settings.json").write_text(
        json.dumps(
            {
                "theme": "x",
                "hooks": {
                    "BeforeTool": [{"matcher": "x", "hooks": [{"type": "command", "command": "mine"}]}]
                },
            }
        )
    )
    for _ in range(2):
        gemini_install.install(state_dir=short_tmp(), timeout_s=20, home=str(tmp_path), binary=None)
    data = json.loads((tmp_path / "settings.json").read_text())
    groups = data["hooks"]["BeforeTool"]
    assert data["theme"] == "x" and len(groups) == 2
    assert groups[1]["hooks"][0]["timeout"] == 30_000  # milliseconds: --timeout + 10 s
    assert "exit 2" in groups[1]["hooks"][0]["command"]


def test_codex_trust_is_written_in_a_block_of_its_own():
    config = 'model = "x"\n\n[hooks.state."/other:pre_tool_use:0:0"]\ntrusted_hash = "sha256:aa"\n'
    once = codex_install.with_trust(config, {"/h/hooks.json:pre_tool_use:1:0": "sha256:bb"})
    twice = codex_install.with_trust(once, {"/h/hooks.json:pre_tool_use:1:0": "sha256:cc"})
    data = tomllib.loads(twice)
    assert data["hooks"]["state"]["/h/hooks.json:pre_tool_use:1:0"]["trusted_hash"] == "sha256:cc"
    assert data["hooks"]["state"]["/other:pre_tool_use:0:0"]["trusted_hash"] == "sha256:aa"
    assert twice.count(codex_install.TRUST_BEGIN) == 1
    with pytest.raises(installing.SettingsError):
        codex_install.with_trust(config, {"/other:pre_tool_use:0:0": "sha256:zz"})


def test_the_opencode_plugin_blocks_unless_the_hook_allows(tmp_path):
    opencode_install.install(state_dir=short_tmp(), timeout_s=20, home=str(tmp_path), binary=None)
    text = (tmp_path / "plugin" / opencode_install.PLUGIN_NAME).read_text()
    assert opencode_install.installed_argv(text)[:3] == [sys.executable, "-I", "-m"]
    assert "throw new Error" in text and "@@" not in text
    assert (
        subprocess.run(
            ["node", "--check", str(tmp_path / "plugin" / opencode_install.PLUGIN_NAME)]
        ).returncode
        == 0
    )


# ------------------------------------------------------------------ identity and the lean path


def test_a_node_launcher_leading_its_session_is_the_agent_for_hook_and_exec_alike():
    node = ProcStat(pid=100, ppid=1, session=100, start_ticks=1, comm="node", tty=0)
    program = ProcStat(pid=101, ppid=100, session=100, start_ticks=2, comm="codex", tty=0)
    hook = ProcStat(pid=200, ppid=101, session=200, start_ticks=3, comm="python3", tty=0)
    shell = ProcStat(pid=300, ppid=101, session=300, start_ticks=3, comm="bash", tty=0)
    execd = ProcStat(pid=301, ppid=300, session=300, start_ticks=4, comm="python3", tty=0)
    assert _launcher([hook, program, node], 1) == 100
    assert _launcher([execd, shell, program, node], 2) == 100
    in_terminal = ProcStat(pid=100, ppid=1, session=90, start_ticks=1, comm="node", tty=34816)
    assert _launcher([hook, program, in_terminal], 1) is None  # not a session of its own


LEAN_HOOK_ANSWERS = {"no daemon": "deny", "a daemon that allows": "exec --ticket"}


@pytest.mark.parametrize("where", sorted(LEAN_HOOK_ANSWERS))
def test_the_hook_process_imports_no_protocol_types_or_ui(where, request):
    # With a daemon the hook also checks who answers on its socket, and rewrites the call.
    state = (
        request.getfixturevalue("daemon").state_dir if where == "a daemon that allows" else short_tmp() / "x"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-I",
            "-X",
            "importtime",
            "-m",
            "console",
            "hook",
            "codex",
            "--state-dir",
            str(state),
        ],
        input=json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": str(workspace())}),
        capture_output=True,
        text=True,
    )
    assert LEAN_HOOK_ANSWERS[where] in r.stdout, r.stdout
    imported = {
        line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")
    }
    heavy = {
        "msgspec",
        "textual",
        "rich",
        "typing",
        "dataclasses",
        "asyncio",
        "console.cli",
        "console.client",
    }
    assert not heavy & imported, heavy & imported


def test_copilot_hook_inputs_name_no_event_so_their_fields_tell_it():
    assert copilot_hook.attention_event({"sessionId": "s", "prompt": "hi"}) == "UserPromptSubmit"
    assert copilot_hook.attention_event({"sessionId": "s", "stopReason": "end_turn"}) == "Stop"
    assert copilot_hook.attention_event({"toolName": "bash", "prompt": "x", "toolArgs": {}}) is None
    out = io.StringIO()  # an attention call answers nothing: it never decides a tool
    call = io.StringIO('{"sessionId": "s", "prompt": "p"}')
    assert copilot_hook.run_hook(call, out, state_dir=str(short_tmp() / "none")) == 0
    assert out.getvalue() == ""
