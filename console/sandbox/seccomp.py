"""The seccomp filter every sandboxed command runs under, assembled here as classic BPF.

bwrap's ``--seccomp FD`` loads a compiled filter (an array of ``struct sock_filter``)
right before it runs the command, after its own mounts. The filter answers EPERM to the
system calls a command in the sandbox has no business making, the ones that reach past
the namespaces or are the usual first step of a kernel exploit:

- tracing and reading other processes: ``ptrace``, ``process_vm_readv``/``writev``;
- the kernel keyring: ``keyctl``, ``add_key``, ``request_key`` (not namespaced);
- ``bpf``, ``userfaultfd``, ``perf_event_open``;
- the mount family: ``mount``, ``umount2``, ``pivot_root``, ``open_tree``, ``move_mount``,
  ``fsopen``, ``fsconfig``, ``fsmount``, ``fspick``, ``mount_setattr``;
- ``setns``; kernel modules, ``kexec``, ``reboot``, ``swapon``/``swapoff``, ``acct``;
- ``ioctl(TIOCSTI)`` and ``ioctl(TIOCLINUX)``: typing into the terminal the command
  shares (a PTY session's own, or the operator's for a captured run's stdin).

System calls of another ABI than the daemon's are refused whole (a 32-bit ``int 0x80``
or an x32 call could name the same call by another number). Without a table for this
machine's architecture there is no filter (:func:`program` returns None) and
``daemon status`` says so.
"""

from __future__ import annotations

import errno
import platform
import struct

# Classic BPF opcodes (linux/bpf_common.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000

# struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]
_NR = 0
_ARCH = 4
_ARG1_LOW = 16 + 8  # args[1], its low 32 bits (little-endian)

TIOCSTI = 0x5412
TIOCLINUX = 0x541C
X32_SYSCALL_BIT = 0x40000000

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "userfaultfd",
    "perf_event_open",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setns",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
)

# (AUDIT_ARCH_*, whether x32 numbers exist, syscall numbers) per machine.
_TABLES: dict[str, tuple[int, bool, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        True,
        {
            "ioctl": 16,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "userfaultfd": 323,
            "perf_event_open": 298,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "setns": 308,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "reboot": 169,
            "swapon": 167,
            "swapoff": 168,
            "acct": 163,
        },
    ),
    "aarch64": (
        0xC00000B7,
        False,
        {
            "ioctl": 29,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "userfaultfd": 282,
            "perf_event_open": 241,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "setns": 268,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "reboot": 142,
            "swapon": 224,
            "swapoff": 225,
            "acct": 89,
        },
    ),
}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The compiled filter for ``machine`` (this one by default), or None without a table."""
    table = _TABLES.get(machine or platform.machine())
    if table is None:
        return None
    arch, has_x32, numbers = table
    deny = _RET_K, SECCOMP_RET_ERRNO | errno.EPERM
    body: list[tuple[int, int, int, int]] = []  # (code, k, jt, jf) with jumps resolved below
    # Jumps to "deny" are written as a marker and resolved once the length is known.
    DENY = -1
    body.append((_LD_W_ABS, _ARCH, 0, 0))
    body.append((_JEQ_K, arch, 1, 0))
    body.append((*deny, 0, 0))
    body.append((_LD_W_ABS, _NR, 0, 0))
    if has_x32:
        body.append((_JGE_K, X32_SYSCALL_BIT, DENY, 0))
    for name in DENIED:
        body.append((_JEQ_K, numbers[name], DENY, 0))
    # ioctl: look at the request (args[1]); anything else is allowed.
    body.append((_JEQ_K, numbers["ioctl"], 0, 3))
    body.append((_LD_W_ABS, _ARG1_LOW, 0, 0))
    body.append((_JEQ_K, TIOCSTI, DENY, 0))
    body.append((_JEQ_K, TIOCLINUX, DENY, 0))
    body.append((_RET_K, SECCOMP_RET_ALLOW, 0, 0))
    deny_at = len(body)
    body.append((*deny, 0, 0))
    out = []
    for index, (code, k, jt, jf) in enumerate(body):
        if jt == DENY:
            jt = deny_at - index - 1
        if jf == DENY:
            jf = deny_at - index - 1
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise ValueError("seccomp program too long for a short jump")
        out.append(_insn(code, k, jt, jf))
    return b"".join(out)


def number(name: str, machine: str | None = None) -> int:
    """The system call number of ``name`` on ``machine`` (this one by default); -1 unknown."""
    table = _TABLES.get(machine or platform.machine())
    return -1 if table is None else table[2].get(name, -1)


def description(machine: str | None = None) -> str:
    """What ``daemon status`` says of the filter."""
    if program(machine) is None:
        return f"no seccomp filter (no system call table for {machine or platform.machine()})"
    return f"seccomp: {len(DENIED)} system calls and TIOCSTI refused"
