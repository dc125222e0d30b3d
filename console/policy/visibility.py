"""What of the operator's home a sandboxed command may read: the defaults of `readable`.

The sandbox hides every home directory (console/sandbox/home.py). Installed software is
not a secret and commands need it, so the default ``readable`` shows the usual per-user
toolchain directories — and never their credential files: ``~/.cargo`` holds registry
tokens, so only ``~/.cargo/bin``; ``~/.npmrc``, ``~/.ssh``, ``~/.aws``, ``~/.config``
and shell history stay hidden. Setting ``readable`` in the policy replaces this list.
"""

from __future__ import annotations

DEFAULT_READABLE: tuple[str, ...] = (
    "~/.pyenv",
    "~/.nvm",
    "~/.rustup",
    "~/.cargo/bin",
    "~/.local/bin",
    "~/.local/lib",
    "~/go/bin",
    "~/.bun/bin",
    "~/.deno/bin",
    "~/.volta",
    "~/.asdf/installs",
    "~/.asdf/shims",
    "~/.local/share/mise/installs",
    "~/.sdkman/candidates",
)
