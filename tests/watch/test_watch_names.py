"""File names are untrusted text: escaped for display, lossless in JSON."""

from __future__ import annotations

import json
import os

from hypothesis import given
from hypothesis import strategies as st

from console.contract.strictjson import loads
from console.watch import display_path, is_plain, json_path, path_from_json


def test_plain_names_are_unchanged():
    for name in ("src/app.py", ".git/hooks/pre-commit", "docs/café/naïve.md", "数据/文件.txt"):
        assert display_path(name) == name
        assert is_plain(name)


def test_controls_bidi_zero_width_and_bad_bytes_are_escaped():
    assert display_path("a\x1b[31mb") == "a\\x1b[31mb"
    assert display_path("x\ny\rz\t") == "x\\x0ay\\x0dz\\x09"
    assert display_path("\u202eexe.txt") == "\\u202eexe.txt"
    assert display_path("a\u200bb\ufeff") == "a\\u200bb\\ufeff"
    assert display_path("c1\x9b") == "c1\\x9b"
    assert display_path(os.fsdecode(b"bad\xff\xfe")) == "bad\\xff\\xfe"
    assert display_path("back\\slash") == "back\\\\slash"
    assert not is_plain("a\x00b")


@given(st.text())
def test_display_is_printable_and_never_raises(name):
    shown = display_path(name)
    assert shown.isprintable()
    assert all(ch == " " or not ch.isspace() for ch in shown)


@given(st.binary(min_size=1, max_size=64))
def test_json_form_round_trips_any_bytes(raw):
    name = os.fsdecode(raw)
    data = json_path(name)
    assert loads(json.dumps(data)) == data  # strict JSON: no lone surrogates
    assert os.fsencode(path_from_json(data)) == raw
