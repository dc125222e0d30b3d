"""Packages whose exported names load from their modules when first asked for.

A package's ``__init__`` that imports every module it re-exports makes each importer pay
for all of them: the protocol needs the contract's strict JSON and the policy's grants,
and every CLI start and hook would load the operation parser, the policy file's reader
and the evaluator with them. :func:`lazy_exports` makes the package import the module
that defines a name when the name is first read (``from console.policy import evaluate``
or ``console.policy.evaluate``), as PEP 562's module ``__getattr__`` does.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


class _LazyPackage(ModuleType):
    """A package module that loads an exported name's home module on first read.

    A name that is also the name of a submodule (``fingerprint``, ``evaluate``) stays
    the exported function: the import system sets each submodule it loads as an
    attribute of its package, which would otherwise replace the function with the
    module depending on what was imported first."""

    def __getattr__(self, name: str) -> object:
        home = vars(self).get("_LAZY_HOMES", {}).get(name)
        if home is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{self.__name__}.{home}"), name)
        vars(self)[name] = value  # later reads are plain attribute lookups
        return value

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, ModuleType) and name in vars(self).get("_LAZY_HOMES", {}):
            return  # a submodule of an exported name's name: the name wins
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*vars(self), *vars(self).get("_LAZY_HOMES", {})})


def lazy_exports(package: str, homes: dict[str, tuple[str, ...]]) -> None:
    """Make ``package`` (its ``__init__`` calls this with ``__name__``) load each name in
    ``homes`` (module -> the names it defines) from that module when first read."""
    module = sys.modules[package]
    vars(module)["_LAZY_HOMES"] = {name: home for home, names in homes.items() for name in names}
    module.__class__ = _LazyPackage
