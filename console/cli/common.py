"""What every subcommand shares: reading inputs, failing with one clear line."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

from console.contract.problem import Problem

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_INVALID = 2
EXIT_UNREACHABLE = 3


class CLIError(Exception):
    """A failure to report as one line on stderr, with an exit code (and a problem for --json)."""

    def __init__(self, message: str, code: int = EXIT_INVALID, problem: Problem | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.problem = problem


def read_input(source: str) -> bytes:
    """The bytes of FILE, or of standard input for ``-``."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        with open(source, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CLIError(f"cannot read {source}: {exc.strerror}") from None


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=True) + "\n")


def die(message: str, code: int = EXIT_INVALID) -> NoReturn:
    raise CLIError(message, code)
