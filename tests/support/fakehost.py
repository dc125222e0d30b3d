"""A filesystem that answers from a table: for the fingerprint vectors and pure tests.

Every path is taken to be canonical and to be a directory unless it is listed as a
file; bare executable names live in /usr/bin. A file's text is what the table says, so
content binding can follow what a listed script sources or a listed makefile includes.
"""

from __future__ import annotations

import hashlib
import posixpath

from console.contract.host import Resolved


class FakeHost:
    def __init__(self, files: dict[str, str] | None = None, missing: tuple[str, ...] = ()) -> None:
        self.files = dict(files or {})
        self.missing = set(missing)

    def resolve(self, path: str) -> Resolved:
        path = posixpath.normpath(path)
        if path in self.missing:
            return Resolved(path, "missing")
        if path in self.files or path.startswith("/usr/bin/"):
            return Resolved(path, "exec")
        return Resolved(path, "dir")

    def which(self, name: str) -> str | None:
        path = "/usr/bin/" + name
        return None if path in self.missing else path

    def file_sha256(self, path: str) -> str | None:
        if path not in self.files:
            return None
        return hashlib.sha256(self.files[path].encode()).hexdigest()

    def read_small_text(self, path: str, limit: int) -> str | None:
        text = self.files.get(path)
        if text is None or len(text.encode()) > limit:
            return None
        return text

    def listdir(self, path: str) -> list[str]:
        prefix = posixpath.normpath(path).rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})
