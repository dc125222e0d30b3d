"""The few raw libghostty-vt helpers this package needs beyond `pyghostty.Terminal`.

pyghostty exposes the whole C ABI through `ffi`/`lib` but wraps only a little of it.
Everything that touches raw handles lives here, so the rest of the package reads as
Python. The cell bit layout is taken from the library's own type manifest rather than
hard-coded, and a layout this module does not understand fails at import time instead
of painting garbage.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cffi import CDefError
from pyghostty import ffi, lib
from pyghostty._ffi import GhosttyError, check, union_fn

__all__ = [
    "CELL",
    "GhosttyError",
    "check",
    "decoded_copy",
    "ffi",
    "lib",
    "read_bytes",
    "scroll_viewport",
    "sized",
    "union_fn",
]

# ABI-mode cffi cannot pass a union by value; GhosttyTerminalScrollViewport is a tagged
# union of 24 bytes, passed in memory on x86-64 and indirectly on arm64, so a
# layout-identical struct twin has the same call ABI (pyghostty does the same for
# GhosttyPoint).
try:
    ffi.typeof("ConsoleScrollViewportS")
except CDefError:
    ffi.cdef(
        """
        typedef struct { int64_t value; uint64_t _pad; } ConsoleScrollValueS;
        typedef struct { GhosttyTerminalScrollViewportTag tag; ConsoleScrollValueS value; }
            ConsoleScrollViewportS;
        """
    )
assert (ffi.sizeof("ConsoleScrollViewportS"), ffi.alignof("ConsoleScrollViewportS")) == (
    ffi.sizeof("GhosttyTerminalScrollViewport"),
    ffi.alignof("GhosttyTerminalScrollViewport"),
)
_scroll_fn = union_fn("ghostty_terminal_scroll_viewport", "void(*)(GhosttyTerminal, ConsoleScrollViewportS)")


def scroll_viewport(handle: Any, tag: int, value: int = 0) -> None:
    arg = ffi.new("ConsoleScrollViewportS*")
    arg.tag = tag
    arg.value.value = value
    _scroll_fn(handle, arg[0])


def sized(ctype: str) -> Any:
    """A zeroed struct following the size-field convention, nested sizes set too."""
    p = ffi.new(ctype + "*")
    _set_sizes(p)
    return p


def _set_sizes(p: Any) -> None:
    t = ffi.typeof(p).item
    for name, field in t.fields:
        if name == "size":
            p.size = ffi.sizeof(t)
        elif field.type.kind == "struct":
            _set_sizes(ffi.addressof(p[0], name))


def read_bytes(call: Callable[[Any, int, Any], int], what: str) -> bytes:
    """Run the C API's size-query-then-fill dance over `call(buf, len, n_out)`."""
    n = ffi.new("size_t*")
    res = call(ffi.NULL, 0, n)
    if res == lib.GHOSTTY_SUCCESS:
        return b""
    if res != lib.GHOSTTY_OUT_OF_SPACE:
        check(res, what)
    buf = ffi.new("uint8_t[]", max(n[0], 1))
    check(call(buf, len(buf), n), what)
    return bytes(ffi.buffer(buf, n[0]))


@contextmanager
def decoded_copy(handle: Any) -> Iterator[Any]:
    """A private copy of a terminal (both screens, scrollback, modes) via the binary
    snapshot codec, freed on exit. Used to read the primary screen while the
    alternate one is active, which the VT formatter cannot do on the live terminal."""
    ptr = ffi.new("uint8_t**")
    size = ffi.new("size_t*")
    check(lib.ghostty_snapshot_encode_alloc(handle, ffi.NULL, ptr, size), "snapshot encode")
    try:
        blob = ffi.buffer(ptr[0], size[0])[:]
    finally:
        lib.ghostty_free(ffi.NULL, ptr[0], size[0])
    dec = ffi.new("GhosttySnapshotDecoder*")
    check(lib.ghostty_snapshot_decoder_new_buf(ffi.NULL, dec, blob, len(blob)), "snapshot decoder")
    term = ffi.new("GhosttyTerminal*")
    try:
        check(lib.ghostty_snapshot_decoder_decode(dec[0], term), "snapshot decode")
    finally:
        lib.ghostty_snapshot_decoder_free(dec[0])
    try:
        yield term[0]
    finally:
        lib.ghostty_terminal_free(term[0])


class _CellLayout:
    """Bit positions inside a GhosttyCell (a packed u64), from `ghostty_type_json`."""

    def __init__(self) -> None:
        manifest = json.loads(ffi.string(lib.ghostty_type_json()).decode())
        try:
            bits = manifest["types"]["GhosttyCell"]["bits"]
            content = bits["content"]
            arms = content["arms"]
            base = content["lsb"]
            self.tag_shift, self.tag_mask = _field(bits["content_tag"], 0)
            self.cp_shift, self.cp_mask = _field(arms["CODEPOINT"]["bits"]["codepoint"], base)
            self.pal_shift, self.pal_mask = _field(arms["BG_COLOR_PALETTE"]["bits"]["index"], base)
            rgb = arms["BG_COLOR_RGB"]["bits"]
            self.r_shift, _ = _field(rgb["r"], base)
            self.g_shift, _ = _field(rgb["g"], base)
            self.b_shift, _ = _field(rgb["b"], base)
            self.style_shift, self.style_mask = _field(bits["style_id"], 0)
            self.wide_shift, self.wide_mask = _field(bits["wide"], 0)
            tags = manifest["types"]["GhosttyCellContentTag"]["values"]
            wides = manifest["types"]["GhosttyCellWide"]["values"]
        except KeyError as exc:  # pragma: no cover - only on an incompatible libghostty-vt
            raise ImportError(f"libghostty-vt cell layout not understood (missing {exc})") from exc
        self.TAG_CODEPOINT = tags["CODEPOINT"]
        self.TAG_GRAPHEME = tags["CODEPOINT_GRAPHEME"]
        self.TAG_BG_PALETTE = tags["BG_COLOR_PALETTE"]
        self.TAG_BG_RGB = tags["BG_COLOR_RGB"]
        self.WIDE_WIDE = wides["WIDE"]
        self.WIDE_SPACER_TAIL = wides["SPACER_TAIL"]
        self.WIDE_SPACER_HEAD = wides["SPACER_HEAD"]


def _field(spec: dict[str, int], base: int) -> tuple[int, int]:
    return base + spec["lsb"], (1 << spec["width"]) - 1


CELL = _CellLayout()
