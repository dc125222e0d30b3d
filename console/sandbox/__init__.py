"""The executor: approved captured operations run inside a bubblewrap sandbox.

The daemon calls :func:`probe` and :func:`sweep` once at start (in a thread), builds
one :class:`SandboxConfig`, and for each approved operation awaits :func:`execute`.
PTY sessions use :func:`prepare`, spawn ``Prepared.argv`` themselves (passing
``Prepared.pass_fds``) and call ``Prepared.confirm(pid)`` at once: the sandbox waits,
set up, until its mounts are checked. See plan.py
for what the boundary grants and executor.py for statuses and outcome kinds.
"""

from console.sandbox.capture import OutputChunk, Stream, StreamResult
from console.sandbox.executor import ExecResult, Status, Unauthorized, execute
from console.sandbox.plan import (
    Prepared,
    SandboxConfig,
    SandboxSetupError,
    SandboxUnavailable,
    prepare,
)
from console.sandbox.probing import SandboxProbe, probe
from console.sandbox.tempdir import PrivateTempRoot, TempRootError, sweep

__all__ = [
    "ExecResult",
    "OutputChunk",
    "Prepared",
    "PrivateTempRoot",
    "SandboxConfig",
    "SandboxProbe",
    "SandboxSetupError",
    "SandboxUnavailable",
    "Status",
    "Stream",
    "StreamResult",
    "TempRootError",
    "Unauthorized",
    "execute",
    "prepare",
    "probe",
    "sweep",
]
