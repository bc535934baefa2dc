"""The unsafe local backend: a plain subprocess with rlimits, NO isolation; only with ``--unsafe-local-exec``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ...core import SandboxUnavailableError
from ..base import ExecResult
from .common import _BaseSandbox, _boot_dir, _python, _sandbox_env, _to_result
from .process import Follow, _count_processes

__all__ = ["UnsafeLocalSandbox"]


class UnsafeLocalSandbox(_BaseSandbox):
    """Plain subprocess with rlimits (``prlimit``) in a temporary directory; NO isolation (network and every file the
    caller can read), ``backend="unsafe-local"``. The process group is killed on timeout and after the program exits;
    the memory limit holds for the program and its descendants together (:class:`~.process.TreeWatch`)."""

    name = "unsafe-local"

    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:
        L = self.limits
        if not shutil.which("prlimit"):  # pragma: no cover
            raise SandboxUnavailableError(
                "`prlimit` (util-linux) is missing", what="unsafe-local sandbox", fix="apt-get install -y util-linux"
            )
        argv = L.prlimit(timeout_s, L.max_processes + _count_processes(os.getuid()))
        peak_r, peak_w = os.pipe()
        home = {"HOME": str(workdir), "TMPDIR": str(workdir), "MPLCONFIGDIR": str(workdir / ".mpl")}
        env = _sandbox_env({**home, "PYTHONPATH": _boot_dir(), "SGIEVAL_PEAK_FD": str(peak_w)})
        try:
            follow = Follow(
                [*argv, _python(), "-X", "utf8", script],
                timeout_s=timeout_s,
                output_bytes=L.output_bytes,
                pass_fds=[peak_w],
                peaks=[peak_r],
                memory_mb=L.memory_mb,
                env=env,
                cwd=str(workdir),
            ).run()
        finally:
            os.close(peak_r)
        raw = follow.raws[0]
        err = raw.stderr.decode("utf-8", "replace")
        if raw.returncode == 127 and err.startswith("prlimit: failed to execute"):
            raise SandboxUnavailableError(
                f"cannot start the interpreter: {err.strip()[:300]}",
                what="sandbox backend 'unsafe-local'",
                fix="check sys.executable",
            )
        return _to_result(raw, L.output_bytes, self.name)
