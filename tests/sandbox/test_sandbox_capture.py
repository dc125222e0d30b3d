"""Head-and-tail capture: exact prefix and suffix, whatever the chunking."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from console.sandbox.capture import StreamCapture, StreamResult


@given(
    data=st.binary(max_size=300),
    capture=st.integers(min_value=0, max_value=64),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=20),
)
def test_head_and_tail_are_the_stream_ends(data, capture, cuts):
    c = StreamCapture(capture)
    edges = sorted({0, len(data), *(x for x in cuts if x <= len(data))})
    for a, b in itertools.pairwise(edges):
        c.add(data[a:b])
    r = c.result()
    head_limit = (capture + 1) // 2
    tail_limit = capture - head_limit
    assert r.total_bytes == len(data)
    if len(data) <= capture:
        assert (r.head, r.tail, r.truncated) == (data, b"", False)
    else:
        assert r.head == data[:head_limit]
        assert r.tail == (data[len(data) - tail_limit :] if tail_limit else b"")
        assert r.truncated
    assert r.tail_offset == len(data) - len(r.tail)
    assert data[r.tail_offset :] == r.tail


def test_to_dict_gives_text_and_exact_bytes():
    r = StreamResult(head=b"caf\xc3", tail=b"\xa9!", total_bytes=100, truncated=True)
    d = r.to_dict()
    assert d["head"] == "caf\ufffd"
    assert d["head_base64"] == "Y2Fmww=="
    assert d["tail_offset"] == 98
    assert d["truncated"] is True
