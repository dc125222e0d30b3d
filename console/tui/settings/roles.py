"""Role text: the few looks every widget draws its text in, styled once for all of them.

A look is a theme colour with a weight (``muted``, ``ok``, ``warning-bold``,
``error-bold``, ``accent``…), plus the two marks for hostile text (``escape``,
``lookalike``) and the capability badges of a request (``badge--network``…). Their CSS
is in ``console/tui/console.tcss`` (``.role--muted { color: $text-muted; }``…), once: a
widget that draws text in roles adds the looks it uses (:func:`roles`, and
:data:`BADGE_CLASSES`) to its ``COMPONENT_CLASSES`` and looks them up by
:func:`role_class`. The theme (``themes/*.toml``) sets the colours; the looks follow it.

:data:`DETAIL_LOOKS` says which look each role of :mod:`console.tui.render.present`
has in the text views (the request detail, the history entry, the watch detail, a
history record), so those four share one look instead of copies of it.
"""

from __future__ import annotations

from types import MappingProxyType

# The looks; console.tcss gives each one its CSS (`.role--NAME`).
LOOKS = (
    "muted",  # $text-muted: labels, times, what is beside the point
    "note",  # muted italic: an empty list's message, an ended session
    "struck",  # muted, struck through: what no longer applies (a revoked grant)
    "ok",  # $success
    "ok-bold",
    "warning",  # $warning
    "warning-bold",
    "error",  # $error
    "error-bold",
    "alarm",  # $error behind $background, bold: a protected path's pattern
    "accent",  # $accent
    "accent-bold",
    "accent-italic",
    "secondary",  # $secondary
    "primary-bold",  # $primary, bold: headings
    "strong",  # $foreground, bold and underlined: the program a command runs
    "escape",  # an escaped control character in agent text
    "lookalike",  # a letter that looks like another (homoglyph)
)
# The capability badges of a request (console/tui/model/badges.py), in the queue and the detail.
BADGES = ("unrestricted", "protected", "workspace", "outside", "network", "environment", "other")

ROLE_CLASSES: frozenset[str] = frozenset(f"role--{look}" for look in LOOKS)
BADGE_CLASSES: frozenset[str] = frozenset(f"badge--{kind}" for kind in BADGES)


def roles(*looks: str) -> set[str]:
    """The component classes of some looks, for a widget's ``COMPONENT_CLASSES`` (a widget
    declares only the looks it draws: Textual styles each declared class on every update)."""
    return {role_class(look) for look in looks}


def role_class(look: str) -> str:
    """The component class of a look (``muted`` → ``role--muted``)."""
    if look not in LOOKS:
        raise KeyError(f"no look {look!r}; the looks are {', '.join(LOOKS)}")
    return f"role--{look}"


def badge_class(kind: str) -> str:
    """The component class of a capability badge (``network`` → ``badge--network``)."""
    if kind not in BADGES:
        raise KeyError(f"no badge {kind!r}; the badges are {', '.join(BADGES)}")
    return f"badge--{kind}"


DETAIL_LOOKS: MappingProxyType[str, str] = MappingProxyType(
    {
        "heading": role_class("primary-bold"),
        "label": role_class("muted"),
        "dim": role_class("muted"),
        "program": role_class("strong"),
        "escape": role_class("escape"),
        "lookalike": role_class("lookalike"),
        "marker": role_class("accent-italic"),
        "escalation": role_class("error-bold"),
        "within": role_class("ok"),
        "forbidden": role_class("muted"),
        "warning": role_class("warning-bold"),
        "added": role_class("ok-bold"),
        "removed": role_class("error-bold"),
        "operator": role_class("accent-bold"),
        "redirect": role_class("warning"),
        "substitution": role_class("warning-bold"),
        "allow": role_class("ok"),
        "deny": role_class("error"),
        **{f"badge-{kind}": badge_class(kind) for kind in BADGES},
    }
)
