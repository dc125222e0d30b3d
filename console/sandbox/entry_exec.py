"""Starting a sandboxed command from the sealed copy of its entry point, not from its path.

A pin mounted over a path inside the sandbox (console/sandbox/content_pins.py) holds
against an edit in place, but not against a rename: Linux detaches a mount in every
other namespace when a new file is renamed over its mount point, so a second writer of
the workspace can put its own file back at the path between the sandbox's setup and the
interpreter's ``open``. The entry point — the script an interpreter runs, or the
executable itself — is therefore handed to the command as a descriptor of its sealed
memfd, which no rename reaches, while ``$0`` (``sys.argv[0]``) still names the path:

- a shell script: ``sh [opts] -c '. /dev/fd/N' SCRIPT ARGS…`` (``$0`` is SCRIPT, the
  arguments follow; a script run directly is started by its ``#!`` shell the same way);
- a Python script: ``python [opts] -c RUNNER SCRIPT ARGS…``, where RUNNER sets
  ``sys.argv``, ``sys.path[0]`` and ``__file__`` as for the script and executes the
  sealed bytes as ``__main__``.

Binaries (an interpreter under ``~/.pyenv`` finds its library next to its own path) and
scripts of other interpreters (node, ruby, perl) are still opened by path: their pin and
the check after setup (console/sandbox/verify.py) are what holds there.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from console.contract.content import interpreter_family
from console.sandbox.content_pins import Pin, Pins

# Sets up what running the script by path would have, then runs the sealed bytes. It
# opens /dev/fd/N (a new open file, at offset 0): the descriptor itself shares its offset
# with the one bwrap read the pin's mount from.
PYTHON_RUNNER = (
    "import os, sys\n"
    "sys.argv = sys.argv[1:]\n"
    "if not sys.flags.safe_path:\n"
    "    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))\n"
    "with open('/dev/fd/{fd}', 'rb') as f:\n"
    "    code = compile(f.read(), sys.argv[0], 'exec')\n"
    "g = {{'__name__': '__main__', '__file__': sys.argv[0], '__builtins__': __builtins__}}\n"
    "del os, sys, f\n"
    "exec(code, g)\n"
)


def _shebang(data: bytes) -> list[str] | None:
    if not data.startswith(b"#!"):
        return None
    line = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    words = line.split(None, 1)
    return words or None


def _family(words: list[str]) -> str | None:
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        inner = [w for w in words[1].split() if not w.startswith("-")]
        return interpreter_family(inner[0]) if inner else None
    return interpreter_family(words[0])


def _run_from(family: str | None, fd: int) -> list[str] | None:
    """The options that make an interpreter of ``family`` run descriptor ``fd`` with the
    script's path as ``$0``: the script path and its arguments follow them."""
    if family == "shell":
        return ["-c", f". /dev/fd/{fd}"]
    if family == "python":
        return ["-c", PYTHON_RUNNER.format(fd=fd)]
    return None


def sandbox_argv(
    argv: tuple[str, ...], pins: Pins, visible: frozenset[str], dup: Callable[[int], int] = os.dup
) -> tuple[list[str], list[int]]:
    """``argv`` with its entry point run from a duplicate of its pin's memfd (bwrap takes
    the pin's own descriptor for the mount); the duplicates, which the spawn passes on and
    the caller closes. Only entries the sandbox shows (``visible``: the pinned paths it
    mounts) are rewritten: one it hides stays missing inside, as its path is."""
    out = list(argv)
    fds: list[int] = []
    if not pins.entries:
        return out, fds
    try:
        for index in sorted(pins.entries, reverse=True):  # later positions first: indexes hold
            if pins.entries[index].path in visible:
                out = _rewrite(out, index, pins.entries[index], dup, fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return out, fds


def _rewrite(argv: list[str], index: int, pin: Pin, dup: Callable[[int], int], fds: list[int]) -> list[str]:
    if index == 0:
        words = _shebang(os.pread(pin.fd, 512, 0))
        if words is None or _run_from(_family(words), 0) is None:
            # A binary (an interpreter finds its library next to its own path) or a
            # script of another interpreter: by path, pinned and checked.
            return argv
        fd = dup(pin.fd)
        fds.append(fd)
        options = _run_from(_family(words), fd)
        assert options is not None
        # As the kernel starts a #! script: the interpreter, its one optional argument.
        return [*words, *options, argv[0], *argv[1:]]
    if _run_from(interpreter_family(argv[0]), 0) is None:
        return argv  # node, ruby, perl: by path, pinned and checked
    fd = dup(pin.fd)
    fds.append(fd)
    options = _run_from(interpreter_family(argv[0]), fd)
    assert options is not None
    before = [a for a in argv[1:index] if a != "--"]
    return [argv[0], *before, *options, *argv[index:]]
