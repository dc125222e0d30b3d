"""Other machines, for tests: real OpenSSH ``sshd`` instances on 127.0.0.x, each with its
own host key, its own daemon and state dir, and the test's user key authorised.

Each host's sshd gives its sessions ``AGENT_CONSOLE_HOME`` (its daemon's state dir) and a
PATH that finds this checkout's ``agent-console``, so what runs "there" is the real CLI
(``agent-console daemon dial-stdio``). Runs sshd as the current user (root in CI); its
privilege-separation directory is made when missing, as Debian's unit does.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

from support.daemon import DaemonProcess, short_tmp

SSHD = "/usr/sbin/sshd"
KEYGEN = "ssh-keygen"


def have_sshd() -> bool:
    return Path(SSHD).is_file() and shutil.which(KEYGEN) is not None


def keygen(path: Path) -> None:
    subprocess.run([KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)], check=True)


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


class SSHHost:
    def __init__(
        self, lab: SSHLab, name: str, address: str, *, streamlocal: bool, policy: str | None
    ) -> None:
        self.lab = lab
        self.name = name
        self.address = address
        self.base = lab.base / name
        self.base.mkdir(mode=0o700)
        self.daemon = DaemonProcess(self.base / "s", policy)
        self.host_key = self.base / "host_key"
        keygen(self.host_key)
        self.port = free_port(address)
        self.streamlocal = streamlocal
        self.proc: subprocess.Popen[bytes] | None = None
        bin_dir = Path(sys.executable).parent
        (self.base / "sshd_config").write_text(
            f"ListenAddress {address}:{self.port}\n"
            f"HostKey {self.host_key}\n"
            f"AuthorizedKeysFile {lab.authorized_keys}\n"
            f"PidFile {self.base / 'sshd.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "PermitRootLogin prohibit-password\nStrictModes no\n"
            f"AllowStreamLocalForwarding {'yes' if streamlocal else 'no'}\n"
            "X11Forwarding no\nAllowAgentForwarding no\n"
            # SHLVL=1: bash, run by sshd as the user's shell, skips ~/.bashrc (it reads it only
            # at level 1). The machine's rc files are not the hosts' to run: root's here runs
            # `pyenv rehash`, whose lock, left by any rehash killed mid-way, stalls every
            # session for 60 s.
            f"SetEnv AGENT_CONSOLE_HOME={self.daemon.state_dir} PATH={bin_dir}:/usr/bin:/bin SHLVL=1\n"
            "LogLevel VERBOSE\n"
        )

    @property
    def known_hosts_line(self) -> str:
        key_type, key = Path(f"{self.host_key}.pub").read_text().split()[:2]
        return f"[{self.address}]:{self.port} {key_type} {key}"

    def url(self, path: str = "", **options: str) -> str:
        opts = {"known_hosts": str(self.lab.known_hosts), "identity": str(self.lab.user_key), **options}
        query = "&".join(f"{k}={v}" for k, v in opts.items() if v)
        return f"ssh://{self.lab.user}@{self.address}:{self.port}{path}" + (f"?{query}" if query else "")

    def start_sshd(self, timeout_s: float = 10.0) -> None:
        log = open(self.base / "sshd.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.base / "sshd_config")],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited:\n{(self.base / 'sshd.log').read_text(errors='replace')}")
            with socket.socket() as s, suppress(OSError):
                s.connect((self.address, self.port))
                return
            time.sleep(0.02)
        raise RuntimeError("sshd did not listen in time")

    def stop_sshd(self) -> None:
        """Stop listening and end every connection it serves (sshd's children outlive
        the listener otherwise), as a host going away does."""
        if self.proc is None or self.proc.poll() is not None:
            return
        children = psutil.Process(self.proc.pid).children(recursive=True)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for child in children:
            with suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(children, timeout=5)


class SSHLab:
    """Hosts 127.0.0.2, .3, … with a user key and a known_hosts file pinning them all."""

    def __init__(self) -> None:
        self.base = short_tmp("ssh-")
        self.user = (
            os.environ.get("USER")
            or subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
        )
        self.user_key = self.base / "user_key"
        keygen(self.user_key)
        self.authorized_keys = self.base / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.user_key}.pub").read_text())
        self.authorized_keys.chmod(0o600)
        self.known_hosts = self.base / "known_hosts"
        self.hosts: list[SSHHost] = []

    def add(self, name: str, *, streamlocal: bool = True, policy: str | None = None) -> SSHHost:
        host = SSHHost(self, name, f"127.0.0.{len(self.hosts) + 2}", streamlocal=streamlocal, policy=policy)
        self.hosts.append(host)
        with open(self.known_hosts, "a") as f:
            f.write(host.known_hosts_line + "\n")
        return host

    def start(self) -> None:
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for host in self.hosts:
            host.daemon.start()
            host.start_sshd()

    def close(self) -> None:
        for host in self.hosts:
            host.stop_sshd()
            host.daemon.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def ssh_lab(*names: str, policy: str | None = None, no_streamlocal: tuple[str, ...] = ()) -> Iterator[SSHLab]:
    lab = SSHLab()
    try:
        for name in names:
            lab.add(name, streamlocal=name not in no_streamlocal, policy=policy)
        lab.start()
        yield lab
    finally:
        lab.close()
