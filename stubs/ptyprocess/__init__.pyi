from collections.abc import Mapping, Sequence
from typing import IO, Any

class PtyProcess:
    pid: int
    fd: int
    fileobj: IO[bytes]
    closed: bool
    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        cwd: str | None = ...,
        env: Mapping[str, str] | None = ...,
        echo: bool = ...,
        preexec_fn: Any = ...,
        dimensions: tuple[int, int] = ...,
        pass_fds: Sequence[int] = ...,
    ) -> PtyProcess: ...
    def setwinsize(self, rows: int, cols: int) -> None: ...
    def close(self, force: bool = ...) -> None: ...
    def isalive(self) -> bool: ...
    def write(self, s: bytes, flush: bool = ...) -> int: ...
    def terminate(self, force: bool = ...) -> bool: ...
