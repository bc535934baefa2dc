"""Picking a backend (:func:`get_sandbox`) and the arguments of the ``run_python`` tool."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, Field

from ...core import SANDBOX_BACKENDS as BACKENDS
from ...core import InputError, SandboxUnavailableError
from ..base import Sandbox
from .bwrap import BubblewrapSandbox
from .common import SandboxLimits
from .e2b import E2BSandbox
from .local import UnsafeLocalSandbox

__all__ = ["BACKENDS", "get_sandbox", "RunPythonInput"]


def get_sandbox(backend: str = "auto", *, unsafe_local_exec: bool = False, **limits: Any) -> Sandbox:
    """Pick a sandbox backend.

    Args:
        backend: ``auto`` (E2B when ``E2B_API_KEY`` is set, else bubblewrap), ``bubblewrap``/``bwrap``, ``e2b``,
            or ``unsafe-local`` (needs ``unsafe_local_exec=True``).
        unsafe_local_exec: when bubblewrap cannot start, return ``"unsafe-local"`` instead of raising.
        limits: :class:`SandboxLimits` fields.

    Returns:
        The sandbox.

    Raises:
        InputError: an unknown backend name.
        SandboxUnavailableError: bubblewrap cannot start and ``unsafe_local_exec`` is False.
    """
    b = (backend or "auto").lower()
    if b not in BACKENDS:
        raise InputError(
            f"unknown sandbox backend {backend!r}", what="--sandbox", fix=f"use one of {', '.join(BACKENDS)}"
        )
    lim = SandboxLimits(**limits)
    if b in ("unsafe-local", "local"):
        if not unsafe_local_exec:
            raise SandboxUnavailableError(
                "the unsafe local backend runs model code without isolation",
                what="--sandbox unsafe-local",
                fix="add --unsafe-local-exec to allow it explicitly",
            )
        return UnsafeLocalSandbox(lim)
    if b == "e2b" or (b == "auto" and os.environ.get("E2B_API_KEY")):
        return E2BSandbox(lim)
    try:
        return BubblewrapSandbox(lim)
    except SandboxUnavailableError:
        if unsafe_local_exec:
            return UnsafeLocalSandbox(lim)
        raise


class RunPythonInput(BaseModel):
    """Arguments of the ``run_python`` tool."""

    code: str = Field(description="Python source to run as main.py in a fresh, network-less sandbox")
    files: dict[str, str] = Field(default_factory=dict, description="extra text files (relative name -> content)")
    timeout_s: float = Field(30.0, gt=0, le=600, description="wall-time limit in seconds")
    output_files: list[str] = Field(default_factory=list, description="files to read back after the run")
