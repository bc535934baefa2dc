"""Lazy public names of a folder (DESIGN.md "Adding things": each folder's ``__init__`` lists what others may use)."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, public: dict[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` loading each public name from its module on first use.

    Args:
        package: the folder's package name.
        public: name -> module of the folder (``"module:attribute"`` when the module calls it otherwise).

    Returns:
        The ``__getattr__`` (AttributeError for a name not in ``public``).
    """

    def __getattr__(name: str) -> Any:
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = public[name].partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attribute or name)

    return __getattr__
