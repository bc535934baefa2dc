"""Sandboxed Python execution, one module per backend, each a :class:`~sgieval.tools.base.Sandbox`: :mod:`.bwrap`
(local namespaces; driver in :mod:`.driver_src`), :mod:`.e2b` (cloud microVM), :mod:`.local` (plain subprocess, only
with ``--unsafe-local-exec``); shared parts in :mod:`.common` and :mod:`.process`; :func:`get_sandbox`: :mod:`.factory`.
"""

from __future__ import annotations

from .bwrap import BubblewrapSandbox, bwrap_status
from .common import TRUNCATION_MARKER, SandboxLimits, UnavailableSandbox
from .e2b import E2BSandbox
from .factory import BACKENDS, RunPythonInput, get_sandbox
from .local import UnsafeLocalSandbox
from .process import processes_of_uid

__all__ = [
    "BACKENDS",
    "TRUNCATION_MARKER",
    "BubblewrapSandbox",
    "E2BSandbox",
    "RunPythonInput",
    "SandboxLimits",
    "UnavailableSandbox",
    "UnsafeLocalSandbox",
    "bwrap_status",
    "get_sandbox",
    "processes_of_uid",
]
