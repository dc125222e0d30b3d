"""A filesystem that answers from a table: for the fingerprint vectors and pure tests.

Every path is taken to be canonical and to be a directory unless it is listed as a
file; bare executable names live in /usr/bin.
"""

from __future__ import annotations

import hashlib
import posixpath


class FakeHost:
    def __init__(self, files: dict[str, str] | None = None, missing: tuple[str, ...] = ()) -> None:
        self.files = dict(files or {})
        self.missing = set(missing)

    def realpath(self, path: str) -> str:
        return posixpath.normpath(path)

    def is_dir(self, path: str) -> bool:
        return path not in self.files and path not in self.missing and not path.startswith("/usr/bin/")

    def is_executable_file(self, path: str) -> bool:
        return path not in self.missing and (path in self.files or path.startswith("/usr/bin/"))

    def which(self, name: str) -> str | None:
        path = "/usr/bin/" + name
        return None if path in self.missing else path

    def file_sha256(self, path: str) -> str | None:
        if path not in self.files:
            return None
        return hashlib.sha256(self.files[path].encode()).hexdigest()
