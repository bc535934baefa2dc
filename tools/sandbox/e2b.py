"""The E2B backend: one fresh cloud microVM per run (``e2b-code-interpreter``)."""

from __future__ import annotations

import os
import time
from typing import Any

from ...core import SandboxUnavailableError
from ..base import ExecResult
from .common import SandboxLimits, _BaseSandbox, _check_name, _Raw, _to_result

__all__ = ["E2BSandbox"]


class E2BSandbox(_BaseSandbox):
    """E2B cloud sandbox (``e2b-code-interpreter``): one fresh microVM per run.

    Needs ``E2B_API_KEY`` (or ``api_key``).  Files are uploaded to the sandbox
    home, setup scripts and ``main.py`` run with ``python``; wall time is
    enforced by E2B (``timeout_s``); output is truncated to ``output_bytes``.
    ``peak_memory_mb`` is not known (None).  Raises SandboxUnavailableError
    without a key or when the service cannot be reached.
    """

    name = "e2b"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        api_key: str | None = None,
        template: str | None = None,
        **limit_kwargs: Any,
    ):
        super().__init__(limits, **limit_kwargs)
        self.api_key = api_key or os.environ.get("E2B_API_KEY")
        self.template = template
        if not self.api_key:
            raise SandboxUnavailableError(
                "E2B_API_KEY is not set",
                what="sandbox backend 'e2b'",
                fix="export E2B_API_KEY=... or use --sandbox bubblewrap",
            )

    def run(
        self,
        code: str,
        *,
        files: dict[str, str | bytes] | None = None,
        setup_scripts: list[str] | None = None,
        timeout_s: float | None = None,
        output_files: list[str] | None = None,
    ) -> ExecResult:
        """Run ``code`` as ``main.py`` in a fresh E2B work directory.

        Args:
            code, files, setup_scripts, timeout_s, output_files: as :meth:`sgieval.tools.Sandbox.run` (the
                default ``timeout_s`` is ``limits.timeout_s``).

        Returns:
            The ExecResult :meth:`sgieval.tools.Sandbox.run` describes, with ``backend`` ``"e2b"``.

        Raises:
            InputError: bad file names.
            SandboxUnavailableError: E2B cannot start (no key, no network) or cannot start its interpreter.
        """
        try:
            from e2b import CommandExitException
            from e2b import TimeoutException as E2BTimeout
            from e2b_code_interpreter import Sandbox as _E2B
        except ImportError as e:  # pragma: no cover
            raise SandboxUnavailableError(
                f"e2b-code-interpreter is not installed ({e})",
                what="sandbox backend 'e2b'",
                fix="pip install e2b-code-interpreter",
            ) from e
        timeout = float(timeout_s if timeout_s is not None else self.limits.timeout_s)
        limit = self.limits.output_bytes
        try:
            sbx = _E2B.create(
                template=self.template, api_key=self.api_key, timeout=int(timeout * (2 + len(setup_scripts or []))) + 30
            )
        except Exception as e:  # noqa: BLE001 - any SDK/network failure
            raise SandboxUnavailableError(
                f"cannot create an E2B sandbox: {e}",
                what="sandbox backend 'e2b'",
                fix="check E2B_API_KEY and the network, or use --sandbox bubblewrap",
            ) from e
        try:
            for name, content in (files or {}).items():
                sbx.files.write(_check_name(name, f"files[{name!r}]"), content)
            sbx.files.write("main.py", code)

            def one(script: str) -> ExecResult:
                t0 = time.perf_counter()
                timed_out = False
                try:
                    r = sbx.commands.run(f"python {script}", timeout=timeout)
                    out, err, rc = r.stdout, r.stderr, r.exit_code
                except CommandExitException as e:
                    out, err, rc = e.stdout or "", e.stderr or "", e.exit_code
                except E2BTimeout as e:
                    out, err, rc, timed_out = "", str(e), None, True
                raw = _Raw(
                    stdout=(out or "").encode()[: limit + 1],
                    stderr=(err or "").encode()[: limit + 1],
                    returncode=rc,
                    wall_s=time.perf_counter() - t0,
                    timed_out=timed_out,
                )
                for k in ("stdout", "stderr"):
                    b = getattr(raw, k)
                    if len(b) > limit:
                        setattr(raw, k, b[:limit])
                        raw.truncated[k] = True
                return _to_result(raw, rc, limit, self.name)

            for script in setup_scripts or []:
                res = one(script)
                if res.exit_code != 0 or res.killed_reason:
                    return res.model_copy(update={"setup_failed": True})
            res = one("main.py")
            got: dict[str, str] = {}
            for name in output_files or []:
                try:
                    got[name] = str(sbx.files.read(_check_name(name, "output_files")))[:limit]
                except Exception:  # noqa: BLE001 - missing file
                    continue
            res.files = got
            return res
        finally:
            try:
                sbx.kill()
            except Exception:  # noqa: BLE001
                pass
