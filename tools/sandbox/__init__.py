"""Sandboxed Python execution, one module per backend.

- :mod:`.common`: :class:`SandboxLimits`, output decoding (capped; control characters escaped), the shared ``run`` flow;
  :mod:`.process`: the host-side runner (output caps, wall time, the whole sandbox's memory);
- :mod:`.bwrap`: :class:`BubblewrapSandbox` (local, namespaces; uids leased across processes with lock files), its
  in-sandbox driver in :mod:`.driver_src`;
- :mod:`.e2b`: :class:`E2BSandbox` (cloud microVM);
- :mod:`.local`: :class:`UnsafeLocalSandbox` (plain subprocess, only with ``--unsafe-local-exec``);
- :mod:`.factory`: :func:`get_sandbox`.

Every backend implements :class:`~sgieval.tools.base.Sandbox` and returns an :class:`~sgieval.tools.base.ExecResult`.
"""

from __future__ import annotations

from .bwrap import DEFAULT_UIDS, BubblewrapSandbox, bwrap_status, uid_lock_dir
from .common import SANDBOX_WORKDIR, TRUNCATION_MARKER, SandboxLimits, UnavailableSandbox, escape_control_chars
from .e2b import E2BSandbox
from .factory import BACKENDS, RunPythonInput, get_sandbox
from .local import UnsafeLocalSandbox
from .process import processes_of_uid

__all__ = [
    "BACKENDS",
    "DEFAULT_UIDS",
    "SANDBOX_WORKDIR",
    "TRUNCATION_MARKER",
    "BubblewrapSandbox",
    "E2BSandbox",
    "RunPythonInput",
    "SandboxLimits",
    "UnavailableSandbox",
    "UnsafeLocalSandbox",
    "bwrap_status",
    "escape_control_chars",
    "get_sandbox",
    "processes_of_uid",
    "uid_lock_dir",
]
