"""bash's own reading of a script, without running any of it.

The script is handed to a fresh bash as an exported function, ``BASH_FUNC_f%%=() { :
<script>
}``, and bash prints it back with ``declare -f f``: its normalised re-serialisation, one
command per line, here-document delimiters unquoted, ``$'…'`` decoded, line
continuations joined, comments dropped — the command boundaries bash itself sees.

Why this runs nothing of the script:

- bash imports a function from the environment only if the value parses as exactly one
  function definition of that name (the Shellshock hardening: ``SEVAL_FUNCDEF |
  SEVAL_ONECMD``). A script that closes the body early (``}; touch x; g() {``) is
  refused with "error importing function definition" and nothing after it runs;
  tests/escapes/test_chain_view_bash_parse.py checks it.
- Defining a function executes nothing in its body: no expansion, no command
  substitution, no here-document is read from anywhere but the text.
- The environment is empty apart from that variable (no ``BASH_ENV``, ``ENV``,
  ``SHELLOPTS``, ``BASHOPTS``, ``PS4``), ``--norc --noprofile`` and ``-c`` make it a
  non-interactive shell that reads no startup file, and a non-interactive bash does not
  expand aliases (none exist, and the script cannot define one since nothing in it runs).
- The only command run is ``declare -f f``; stdin is closed, the cwd is ``/``, PATH
  is empty, and a timeout bounds it.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache

from console.contract.shell import BashResult

BASH_CANDIDATES = ("/usr/bin/bash", "/bin/bash")
TIMEOUT_S = 2.0
_MAX_SCRIPT = 100_000  # below the kernel's 128 KiB limit for one environment string


def _bash() -> str | None:
    return next((path for path in BASH_CANDIDATES if os.access(path, os.X_OK)), None)


@lru_cache(maxsize=256)
def bash_parse(script: str) -> BashResult | None:
    """bash's normalised body of ``script`` (``body`` None: bash refused it); None: bash could not run."""
    bash = _bash()
    if bash is None or "\0" in script or len(script.encode("utf-8", "surrogateescape")) > _MAX_SCRIPT:
        return None
    env = {"BASH_FUNC_f%%": "() { :\n" + script + "\n}", "PATH": ""}
    try:
        done = subprocess.run(
            [bash, "--norc", "--noprofile", "-c", "declare -f f"],
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, ValueError, UnicodeError):
        return None
    out = done.stdout.decode("utf-8", "surrogateescape")
    if done.returncode != 0 or not out.startswith("f () \n{ \n"):
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        return BashResult(None, "refused" if first else "no output")
    body = out[len("f () \n{ \n") :]
    body = body.removesuffix("\n").removesuffix("}")
    return BashResult(body)
