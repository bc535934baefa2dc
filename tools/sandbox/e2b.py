"""The E2B backend: one fresh cloud microVM per run (``e2b-code-interpreter``)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from ...core import SandboxUnavailableError
from ..base import ExecResult
from .common import SandboxLimits, _BaseSandbox, _to_result
from .process import _Raw

__all__ = ["E2BSandbox"]


class E2BSandbox(_BaseSandbox):
    """E2B cloud sandbox: files uploaded to the sandbox home, wall time enforced by E2B, output cut at ``output_bytes``,
    ``peak_memory_mb`` unknown. Needs ``E2B_API_KEY`` (or ``api_key``), else SandboxUnavailableError."""

    name = "e2b"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        api_key: str | None = None,
        **limit_kwargs: Any,
    ):
        super().__init__(limits, **limit_kwargs)
        self.api_key = api_key or os.environ.get("E2B_API_KEY")
        if not self.api_key:
            raise SandboxUnavailableError(
                "E2B_API_KEY is not set",
                what="sandbox backend 'e2b'",
                fix="export E2B_API_KEY=... or use --sandbox bubblewrap",
            )

    def _run_programs(
        self, workdir: Path, scripts: list[str], timeout_s: float, output_files: list[str] | None
    ) -> tuple[list[ExecResult], dict[str, str]]:
        from e2b import CommandExitException  # the SDK takes seconds to import: only when a run needs it
        from e2b import TimeoutException as E2BTimeout
        from e2b_code_interpreter import Sandbox as _E2B

        limit = self.limits.output_bytes
        try:
            sbx = _E2B.create(api_key=self.api_key, timeout=int(timeout_s * (1 + len(scripts))) + 30)
        except Exception as e:  # noqa: BLE001 - any SDK/network failure
            raise SandboxUnavailableError(
                f"cannot create an E2B sandbox: {e}",
                what="sandbox backend 'e2b'",
                fix="check E2B_API_KEY and the network, or use --sandbox bubblewrap",
            ) from e

        def one(script: str) -> ExecResult:
            t0 = time.perf_counter()
            raw = _Raw()
            try:
                r = sbx.commands.run(f"python {script}", timeout=timeout_s)
                out, err, raw.returncode = r.stdout, r.stderr, r.exit_code
            except CommandExitException as e:
                out, err, raw.returncode = e.stdout or "", e.stderr or "", e.exit_code
            except E2BTimeout as e:
                out, err, raw.timed_out = "", str(e), True
            raw.wall_s = time.perf_counter() - t0
            raw.stdout, raw.stderr = (out or "").encode()[:limit], (err or "").encode()[:limit]
            raw.truncated = {k: len((v or "").encode()) > limit for k, v in (("stdout", out), ("stderr", err))}
            return _to_result(raw, limit, self.name)

        try:
            for path in sorted(workdir.rglob("*")):
                if path.is_file():
                    sbx.files.write(path.relative_to(workdir).as_posix(), path.read_bytes())
            results: list[ExecResult] = []
            for script in scripts:
                results.append(one(script))
                if len(results) < len(scripts) and (results[-1].exit_code != 0 or results[-1].killed_reason):
                    return results, {}  # a failed setup script: main.py does not run
            got: dict[str, str] = {}
            for name in output_files or []:
                with contextlib.suppress(Exception):  # a missing file
                    got[name] = str(sbx.files.read(name))[:limit]
            return results, got
        finally:
            with contextlib.suppress(Exception):
                sbx.kill()
