"""Fingerprint stability and sensitivity, as properties."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fakehost import FakeHost

from console.contract import strictjson
from console.contract.fingerprint import canonical_bytes, canonical_form, parse_fingerprint
from console.contract.operation import parse
from console.contract.problem import InvalidInput

HOST = FakeHost({"/w/run.sh": "echo 1\n"})

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
env_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00="), min_size=1, max_size=12
)
cap_kinds = st.sampled_from(
    ["process_control", "environment", "host_visible_binding", "isolated_loopback", "unrestricted"]
)


@st.composite
def operations(draw):
    return {
        "kind": draw(st.sampled_from(["shell", "git", "process"])),
        "origin": draw(
            st.sampled_from(["interactive_command", "hook", "plugin", "mcp_server", "background_task"])
        ),
        "mode": draw(st.sampled_from(["captured", "interactive", "durable"])),
        "executable": draw(st.sampled_from(["/usr/bin/git", "/usr/bin/make", "bash", "/w/run.sh"])),
        "args": draw(st.lists(text, max_size=5)),
        "workspace_root": "/w",
        "cwd": draw(st.sampled_from([".", "src", "/w/src/deep"])),
        "env": draw(st.dictionaries(env_names, text, max_size=4)),
        "workspace_access": draw(st.sampled_from(["read_only", "write"])),
        "write_dirs": draw(st.lists(st.sampled_from(["/tmp/a", "/tmp/b", "/var/cache/x"]), max_size=3)),
        "network": draw(st.sampled_from(["none", "any"])),
        "capabilities": draw(
            st.lists(
                st.builds(lambda k, s: {"kind": k, "scope": s} if s else {"kind": k}, cap_kinds, text),
                max_size=3,
            )
        ),
        "justification": draw(text),
        "session_id": draw(text),
    }


def fp(data):
    return parse(data, HOST).fingerprint


@given(operations(), st.randoms())
@settings(max_examples=200)
def test_stable_under_key_env_dir_and_capability_order(data, rnd: random.Random):
    shuffled = dict(rnd.sample(list(data.items()), len(data)))
    shuffled["env"] = dict(rnd.sample(list(data["env"].items()), len(data["env"])))
    shuffled["write_dirs"] = rnd.sample(data["write_dirs"], len(data["write_dirs"])) * 2
    shuffled["capabilities"] = rnd.sample(data["capabilities"], len(data["capabilities"]))
    assert fp(data) == fp(shuffled)
    # The JSON text form and the dict form agree.
    assert parse(json.dumps(shuffled), HOST).fingerprint == fp(data)


@given(operations(), text, text, st.integers(1, 10**6), st.integers(1, 10**6))
@settings(max_examples=100)
def test_excluded_fields_do_not_change_it(data, justification, session, timeout, limit):
    other = dict(data, justification=justification, session_id=session, timeout_ms=timeout)
    other["output"] = {"capture_bytes": limit // 2, "max_bytes": limit}
    assert fp(data) == fp(other)


def _mutations(data):
    """One change to each authority-bearing field."""
    yield "origin", {"origin": "hook" if data["origin"] != "hook" else "plugin"}
    yield "mode", {"mode": "durable" if data["mode"] != "durable" else "captured"}
    yield "kind", {"kind": "git" if data["kind"] != "git" else "shell"}
    yield "tool", {"tool": "other-tool"}
    yield "executable", {"executable": "/usr/bin/rm"}
    yield "args", {"args": [*data["args"], "--force"]}
    same_cwd = data["cwd"].removeprefix("/w/") if data["cwd"].startswith("/") else data["cwd"]
    yield "workspace_root", {"workspace_root": "/w2", "cwd": same_cwd}
    yield "cwd", {"cwd": "elsewhere"}
    yield "env", {"env": {**data["env"], "ZZ_NEW": "1"}}
    yield "stdin", {"stdin": "eA=="}
    yield (
        "workspace_access",
        {"workspace_access": "write" if data["workspace_access"] == "read_only" else "read_only"},
    )
    yield "write_dirs", {"write_dirs": [*data["write_dirs"], "/opt/new"]}
    yield "network", {"network": "any" if data["network"] == "none" else "none"}
    yield "capabilities", {"capabilities": [*data["capabilities"], {"kind": "protected_metadata"}]}


@given(operations())
@settings(max_examples=100)
def test_every_authority_field_changes_it(data):
    base = fp(data)
    for name, change in _mutations(data):
        assert fp({**data, **change}) != base, name


@given(operations())
@settings(max_examples=50)
def test_canonical_bytes_are_utf8_json(data):
    raw = canonical_bytes(parse(data, HOST))
    raw.decode("utf-8")
    decoded = json.loads(raw)
    assert decoded["version"] == 1
    assert "justification" not in decoded
    assert "session_id" not in decoded


@given(operations())
@settings(max_examples=200)
def test_the_plain_encoding_of_the_form_is_the_checked_one(data):
    # canonical_bytes skips strictjson's checking walk: for every form it builds, the
    # bytes must be exactly what the checked RFC 8785 path gives
    form = canonical_form(parse(data, HOST))
    assert strictjson.canonical_plain(form) == strictjson.canonical(form)


def test_content_binding_changes_with_the_file():
    a = parse({"kind": "shell", "executable": "bash", "args": ["run.sh"], "workspace_root": "/w"}, HOST)
    b = parse(
        {"kind": "shell", "executable": "bash", "args": ["run.sh"], "workspace_root": "/w"},
        FakeHost({"/w/run.sh": "echo 2\n"}),
    )
    assert a.fingerprint != b.fingerprint


@pytest.mark.parametrize(
    "text",
    ["", "abc", "A" * 64, "0x" + "a" * 62, " " + "a" * 63, "a" * 63, "a" * 65, "g" * 64, "a" * 63 + "\n"],
)
def test_persistence_form_rejects_anything_but_64_lowercase_hex(text):
    with pytest.raises(InvalidInput):
        parse_fingerprint(text)


@given(st.binary(min_size=32, max_size=32))
def test_persistence_form_accepts_hex(raw):
    assert parse_fingerprint(raw.hex()) == raw.hex()
