"""The unsafe local backend: a plain subprocess with rlimits, NO isolation.

Only with an explicit ``--unsafe-local-exec``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ...core import SandboxUnavailableError
from ..base import ExecResult
from .common import _MIB, _BaseSandbox, _boot_dir, _execute, _python, _sandbox_env, _to_result

__all__ = ["UnsafeLocalSandbox"]


def _count_processes(uid: int) -> int:
    from .bwrap import processes_of_uid

    return len(processes_of_uid(uid))


class UnsafeLocalSandbox(_BaseSandbox):
    """Plain subprocess with rlimits (``prlimit``) in a temporary directory.

    NO isolation: the program sees the network and every file the caller can
    read.  Only with an explicit ``--unsafe-local-exec``; ExecResult.backend is
    ``"unsafe-local"`` so run headers can say so.  The process group is killed
    on timeout and after the program exits; the memory limit holds for the
    program and its descendants together (:class:`~.common.TreeWatch`).
    """

    name = "unsafe-local"

    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:
        L = self.limits
        cpu = L.cpu_seconds(timeout_s)
        nproc = L.max_processes + _count_processes(os.getuid())
        argv = [
            "prlimit",
            f"--as={L.memory_mb * _MIB}",
            f"--cpu={cpu}:{cpu + 1}",
            f"--nproc={nproc}",
            f"--fsize={L.max_file_mb * _MIB}",
            "--core=0",
            "--",
            _python(),
            "-X",
            "utf8",
            script,
        ]
        if not shutil.which("prlimit"):  # pragma: no cover
            raise SandboxUnavailableError(
                "`prlimit` (util-linux) is missing", what="unsafe-local sandbox", fix="apt-get install -y util-linux"
            )
        pipe = os.pipe()
        env = _sandbox_env(
            {
                "HOME": str(workdir),
                "TMPDIR": str(workdir),
                "MPLCONFIGDIR": str(workdir / ".mpl"),
                "PYTHONPATH": _boot_dir(),
                "SGIEVAL_PEAK_FD": str(pipe[1]),
            }
        )
        raw = _execute(
            argv,
            env=env,
            cwd=str(workdir),
            timeout_s=timeout_s,
            output_bytes=L.output_bytes,
            peak_pipe=pipe,
            memory_mb=L.memory_mb,
        )
        code = raw.returncode
        err = raw.stderr.decode("utf-8", "replace")
        if code == 127 and err.startswith("prlimit: failed to execute"):
            raise SandboxUnavailableError(
                f"cannot start the interpreter: {err.strip()[:300]}",
                what="sandbox backend 'unsafe-local'",
                fix="check sys.executable",
            )
        return _to_result(raw, code, L.output_bytes, self.name)
