"""The saved pane layout: a small versioned JSON document, read strictly, written atomically.

The console is a disposable client (sessions live in the daemon), so what it would lose
at quit is only the arrangement: which session is in which pane, the split tree, the
zoom and the focus. This module is that arrangement as plain data, with no Textual, so
it can be read and checked before any widget exists and tested on its own.

The file sits beside the console's config file, keyed by it (``X.toml`` →
``X.layout.json``): two configs (two operators' setups, a demo) keep two layouts. ::

    {"version": 1,
     "root": {"split": "right", "children": [
         {"session": "1a2b3c4d"},
         {"split": "down", "children": [{"session": "5e6f7a8b", "read_only": true},
                                         {"session": "9c0d1e2f"}]}]},
     "zoom": 2, "focus": 2}

``zoom`` and ``focus`` are indexes of panes in reading order (depth first), or null.
Anything else — an unknown version or key, a bad direction, a split with fewer than two
children, a duplicate key — is a :class:`LayoutError` that says what and where; the
caller shows it and keeps the file (see :func:`set_aside`) rather than guessing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = 1
DIRECTIONS = ("right", "down")  # side by side, stacked (as console.tui.panes.pane_area)
MAX_BYTES = 256 * 1024  # a layout is a few hundred bytes; anything near this is not one
MAX_PANES = 64
MAX_DEPTH = 16
_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


class LayoutError(ValueError):
    """The layout file cannot be used; the message says which part is wrong and why."""


@dataclass(frozen=True)
class Pane:
    session: str
    read_only: bool = False


@dataclass(frozen=True)
class Box:
    """A split: its children side by side (``right``) or stacked (``down``)."""

    direction: str
    children: tuple[Pane | Box, ...] = field(default_factory=tuple)


Node = Pane | Box


@dataclass(frozen=True)
class Document:
    root: Node | None = None
    zoom: int | None = None  # index in panes()
    focus: int | None = None

    def panes(self) -> list[Pane]:
        return leaves(self.root)


def leaves(node: Node | None) -> list[Pane]:
    """The panes in reading order (depth first), the order ``zoom`` and ``focus`` count in."""
    if node is None:
        return []
    if isinstance(node, Pane):
        return [node]
    return [leaf for child in node.children for leaf in leaves(child)]


def layout_path(config_path: Path) -> Path:
    """Where the layout of the console using ``config_path`` lives (the file need not exist)."""
    name = config_path.name
    stem = name[: -len(".toml")] if name.endswith(".toml") and len(name) > 5 else name
    return config_path.with_name(f"{stem}.layout.json")


# ------------------------------------------------------------ to and from text


def to_data(doc: Document) -> dict[str, Any]:
    def node(n: Node) -> dict[str, Any]:
        if isinstance(n, Pane):
            return {"session": n.session, "read_only": True} if n.read_only else {"session": n.session}
        return {"split": n.direction, "children": [node(c) for c in n.children]}

    return {
        "version": VERSION,
        "root": None if doc.root is None else node(doc.root),
        "zoom": doc.zoom,
        "focus": doc.focus,
    }


def dumps(doc: Document) -> str:
    check(doc)  # never write what could not be read back
    return json.dumps(to_data(doc), indent=1, sort_keys=True) + "\n"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise LayoutError(f"duplicate key {key!r}")
        out[key] = value
    return out


def loads(text: str) -> Document:
    if len(text) > MAX_BYTES:
        raise LayoutError(f"too large for a layout ({len(text)} characters, at most {MAX_BYTES})")
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except LayoutError:
        raise
    except (ValueError, RecursionError) as exc:
        raise LayoutError(f"not valid JSON: {exc}") from None
    return from_data(data)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _index(data: dict[str, Any], key: str, count: int) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise LayoutError(f"{key}: expected a pane index or null, got {_kind(value)}")
    if not 0 <= value < count:
        raise LayoutError(f"{key}: pane index {value} out of range (the layout has {count} panes)")
    return value


def from_data(data: Any) -> Document:
    if not isinstance(data, dict):
        raise LayoutError(f"expected a JSON object at the top, got {_kind(data)}")
    if "version" not in data:
        raise LayoutError("no version")
    version = data["version"]
    if version != VERSION or isinstance(version, bool):
        raise LayoutError(f"unknown version {version!r} (this console reads version {VERSION})")
    unknown = sorted(set(data) - {"version", "root", "zoom", "focus"})
    if unknown:
        raise LayoutError(f"unknown key {unknown[0]!r}; allowed: focus, root, version, zoom")
    root = None if data.get("root") is None else _node(data["root"], "root", 1)
    count = len(leaves(root))
    if count > MAX_PANES:
        raise LayoutError(f"too many panes ({count}, at most {MAX_PANES})")
    return Document(root, _index(data, "zoom", count), _index(data, "focus", count))


def _node(data: Any, where: str, depth: int) -> Node:
    if depth > MAX_DEPTH:
        raise LayoutError(f"{where}: splits nested deeper than {MAX_DEPTH}")
    if not isinstance(data, dict):
        raise LayoutError(f"{where}: expected a pane or a split (an object), got {_kind(data)}")
    if "split" in data:
        unknown = sorted(set(data) - {"split", "children"})
        if unknown:
            raise LayoutError(f"{where}: unknown key {unknown[0]!r} in a split; allowed: children, split")
        direction = data["split"]
        if direction not in DIRECTIONS:
            raise LayoutError(f'{where}.split: unknown direction {direction!r}; allowed: "right" | "down"')
        children = data.get("children")
        if not isinstance(children, list):
            raise LayoutError(f"{where}.children: expected a list, got {_kind(children)}")
        if len(children) < 2:
            raise LayoutError(f"{where}.children: a split needs at least 2 children, got {len(children)}")
        return Box(
            direction,
            tuple(_node(c, f"{where}.children[{i}]", depth + 1) for i, c in enumerate(children)),
        )
    if "session" in data:
        unknown = sorted(set(data) - {"session", "read_only"})
        if unknown:
            raise LayoutError(f"{where}: unknown key {unknown[0]!r} in a pane; allowed: read_only, session")
        session = data["session"]
        if not isinstance(session, str) or not _SESSION_ID.fullmatch(session):
            raise LayoutError(f"{where}.session: not a session id")
        read_only = data.get("read_only", False)
        if not isinstance(read_only, bool):
            raise LayoutError(f"{where}.read_only: expected true or false, got {_kind(read_only)}")
        return Pane(session, read_only)
    raise LayoutError(f'{where}: neither a pane ("session") nor a split ("split")')


def check(doc: Document) -> None:
    """Raise :class:`LayoutError` if ``doc`` would not read back as itself."""
    if from_data(json.loads(json.dumps(to_data(doc)))) != doc:
        raise LayoutError("the layout does not survive a round trip")


# ------------------------------------------------------------ the file


def load(path: Path) -> Document | None:
    """The saved layout, or None when there is none; :class:`LayoutError` when it is unusable."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LayoutError(f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LayoutError("not UTF-8 text") from None
    return loads(text)


def save(path: Path, doc: Document) -> None:
    """Write atomically: a reader (or a crash) sees the old file or the new one, never half."""
    text = dumps(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def set_aside(path: Path) -> Path:
    """Move an unusable layout file out of the way, keeping it (``.bad``, then ``.bad.1`` …)
    so the next save cannot overwrite what the operator may want to read or mend."""
    for n in range(1000):
        target = path.with_name(path.name + (".bad" if n == 0 else f".bad.{n}"))
        try:
            os.link(path, target)  # never replaces an earlier .bad
        except FileExistsError:
            continue
        os.unlink(path)
        return target
    raise LayoutError("too many .bad copies beside it; remove some")
