"""Which environment overrides are inert, and which ask for the `environment` capability.

The rule is an allowlist. Nearly every program reads some variable that makes it load
or run other code (``GIT_EXTERNAL_DIFF``, ``LESSOPEN``, ``PYTHONBREAKPOINT``,
``npm_config_script_shell``, ``ZDOTDIR``, ``MAKEFLAGS``, ``JAVA_TOOL_OPTIONS``,
``RUSTC_WRAPPER``, ``XDG_CONFIG_HOME`` pointing config lookups at the workspace, ...),
and no list of the risky ones is ever complete. So only the few variables below are
inert — they change how text is shown, never what code runs or which files configure
it — and setting any other name is asking for ``environment`` on that name, which the
operator sees and decides. An inert name with a value that looks like a path (a locale
or terminal name with ``/``) is not inert either: glibc and ncurses would read that
path.
"""

from __future__ import annotations

import re

# Display and locale only. Each entry says why it cannot change what runs.
INERT_ENV: dict[str, str] = {
    "LANG": "locale name; the value must be a plain name (no '/')",
    "LANGUAGE": "message catalogue preference list; plain names only",
    "TERM": "terminal type name, looked up in the system terminfo; plain names only",
    "COLORTERM": "colour capability hint",
    "TZ": "time zone name; no ':' file form, no '..'",
    "NO_COLOR": "asks programs not to colour output",
    "FORCE_COLOR": "asks programs to colour output",
    "CLICOLOR": "BSD-style colour switch",
    "CLICOLOR_FORCE": "BSD-style colour switch",
    "CI": "says 'non-interactive, be plain'",
    "COLUMNS": "terminal width",
    "LINES": "terminal height",
    "PYTHONUNBUFFERED": "unbuffered output",
    "PYTHONDONTWRITEBYTECODE": "no .pyc files written",
}
# LC_CTYPE, LC_ALL, ... are locale names like LANG (LC_* is checked by value below).
INERT_ENV_PREFIXES = ("LC_",)

_LOCALE_VALUE = re.compile(r"[A-Za-z0-9_.@:+-]{0,128}")
_NAME_VALUE = re.compile(r"[A-Za-z0-9_.+-]{0,128}")
_NUMBER_VALUE = re.compile(r"[0-9]{0,6}")
_TZ_VALUE = re.compile(r"[A-Za-z0-9_/+-]{0,64}")


def _inert_value(name: str, value: str) -> bool:
    if name in ("LANG", "LANGUAGE") or name.startswith(INERT_ENV_PREFIXES):
        return bool(_LOCALE_VALUE.fullmatch(value))
    if name == "TERM":
        return bool(_NAME_VALUE.fullmatch(value))
    if name in ("COLUMNS", "LINES"):
        return bool(_NUMBER_VALUE.fullmatch(value))
    if name == "TZ":
        # "Europe/Paris" is a name; ":/path" or "../x" would make libc read that file.
        return bool(_TZ_VALUE.fullmatch(value)) and ".." not in value and not value.startswith("/")
    return len(value) <= 64 and "\n" not in value


def env_is_inert(name: str, value: str = "") -> bool:
    """Whether overriding ``name`` with ``value`` can only change how output looks."""
    known = name in INERT_ENV or (name.startswith(INERT_ENV_PREFIXES) and name[3:].isupper())
    return known and _inert_value(name, value)


def env_is_risky(name: str, value: str = "") -> bool:
    """Every override that is not inert asks for the ``environment`` capability on its name."""
    return not env_is_inert(name, value)
