"""What every sandbox backend shares: limits, output decoding (capped, control characters escaped), file staging and
the common ``run`` flow.

``killed_reason``: ``timeout`` (wall limit); ``cpu_time`` (SIGXCPU, RLIMIT_CPU); ``memory`` (all processes passed
``memory_mb``, :class:`~.process.TreeWatch`, or a MemoryError under RLIMIT_AS); ``output_limit`` (a stream passed
``output_bytes``); ``process_limit`` (RLIMIT_NPROC refused a fork or thread); ``signal`` (any other signal death).
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from ...core import InputError, SandboxUnavailableError, ToolError, escape_control_chars
from ..base import ExecResult
from .driver_src import DRIVER, SITECUSTOMIZE
from .process import _MIB, _Raw

TRUNCATION_MARKER = "\n[sgieval sandbox: output truncated at {limit} bytes]\n"
SANDBOX_WORKDIR = "/sandbox"
_BOOT_MOUNT = "/.sgieval"


class SandboxLimits(BaseModel):
    """Resource limits of one sandboxed program (each setup script and the main program get them separately).

    ``memory_mb``: MiB for all the sandbox's processes together (:class:`TreeWatch`) and the address space of each
    (RLIMIT_AS); ``timeout_s``: wall seconds; ``cpu_time_s``: CPU seconds (RLIMIT_CPU; None: ceil of the wall timeout
    + 1 s, so a busy loop ends as ``timeout``); ``output_bytes`` per stream, beyond which the run is killed and the text
    cut with :data:`TRUNCATION_MARKER`; ``max_processes``: processes + threads of the sandbox uid (RLIMIT_NPROC);
    ``max_file_mb``: largest file written (RLIMIT_FSIZE); ``tmp_mb``: size of the private /tmp tmpfs.
    """

    memory_mb: int = Field(default=2048, ge=64)
    timeout_s: float = Field(default=60.0, gt=0)
    cpu_time_s: float | None = Field(default=None, gt=0)
    output_bytes: int = Field(default=_MIB, ge=1024)
    max_processes: int = Field(default=16, ge=4)
    max_file_mb: int = Field(default=64, ge=1)
    tmp_mb: int = Field(default=64, ge=1)

    def prlimit(self, timeout_s: float, nproc: int) -> list[str]:
        """The ``prlimit`` argv prefix: address space, CPU seconds (hard = soft + 1), processes, file size, no cores.

        Args:
            timeout_s: the run's wall limit in seconds (> 0).
            nproc: RLIMIT_NPROC.

        Returns:
            The argv prefix, ending in ``--``.
        """
        cpu = math.ceil(self.cpu_time_s) if self.cpu_time_s is not None else math.ceil(timeout_s) + 1
        limits = [f"--as={self.memory_mb * _MIB}", f"--cpu={cpu}:{cpu + 1}", f"--nproc={nproc}"]
        return ["prlimit", *limits, f"--fsize={self.max_file_mb * _MIB}", "--core=0", "--"]


_BOOT_DIR: str | None = None
_BOOT_LOCK = threading.Lock()


def _boot_dir() -> str:
    """A directory writable only by us with the sitecustomize and bwrap driver (bound read-only at ``/.sgieval``)."""
    global _BOOT_DIR
    with _BOOT_LOCK:
        if _BOOT_DIR is None or not os.path.isdir(_BOOT_DIR):
            d = tempfile.mkdtemp(prefix="sgieval-boot-")
            for name, text in (("sitecustomize.py", SITECUSTOMIZE), ("driver.py", DRIVER)):
                Path(d, name).write_text(text, encoding="utf-8")
                os.chmod(Path(d, name), 0o644)
            os.chmod(d, 0o755)
            atexit.register(shutil.rmtree, d, True)
            _BOOT_DIR = d
        return _BOOT_DIR


_PROC_LIMIT_PAT = re.compile(
    r"BlockingIOError: \[Errno 11\] Resource temporarily unavailable"
    r"|can't start new thread|fork: retry: Resource temporarily unavailable"
    r"|fork: Resource temporarily unavailable|Cannot fork"
)
_MEMORY_PAT = re.compile(r"\bMemoryError\b|Unable to allocate|Cannot allocate memory|std::bad_alloc|out of memory")


def _decode(data: bytes, truncated: bool, limit: int) -> str:
    text = escape_control_chars(data.decode("utf-8", errors="replace"))
    return text + TRUNCATION_MARKER.format(limit=limit) if truncated else text


def _capped(data: bytes, limit: int) -> str:
    """An output file's text: its first ``limit`` bytes decoded, with the truncation marker when longer."""
    return _decode(data[:limit], len(data) > limit, limit)


def _classify(raw: _Raw, exit_code: int | None, stderr: str) -> str | None:
    """Name the limit that ended the run (ExecResult.killed_reason), or None."""
    if raw.memory_exceeded:
        return "memory"
    if raw.output_exceeded:
        return "output_limit"
    if raw.timed_out:
        return "timeout"
    if exit_code is None or exit_code == 0:
        return None
    if exit_code == -signal.SIGXCPU:
        return "cpu_time"
    if _PROC_LIMIT_PAT.search(stderr):
        return "process_limit"
    if _MEMORY_PAT.search(stderr):
        return "memory"
    return "signal" if exit_code < 0 else None


def _to_result(raw: _Raw, limits_out: int, backend: str) -> ExecResult:
    stdout = _decode(raw.stdout, raw.truncated.get("stdout", False), limits_out)
    stderr = _decode(raw.stderr, raw.truncated.get("stderr", False), limits_out)
    peak_kb = max(raw.peak_kb or 0, raw.tree_peak_kb or 0)
    return ExecResult(
        stdout=stdout,
        stderr=stderr,
        exit_code=raw.returncode,
        wall_time_s=round(raw.wall_s, 6),
        peak_memory_mb=round(peak_kb / 1024.0, 3) if peak_kb else None,
        timed_out=raw.timed_out,
        killed_reason=_classify(raw, raw.returncode, stderr),  # type: ignore[arg-type]
        backend=backend,
    )


def _check_name(name: str, what: str) -> str:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or name.startswith("~"):
        raise InputError(
            f"file name {name!r} must be a relative path inside the work directory",
            what=what,
            fix="use names like 'data.csv' or 'tests/test_a.py'",
        )
    return str(p)


def _sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": SANDBOX_WORKDIR,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        **{f"{lib}_NUM_THREADS": "1" for lib in ("OPENBLAS", "OMP", "MKL", "NUMEXPR")},
        **(extra or {}),
    }


def _python() -> str:
    """The project's interpreter (the virtual environment's ``python``)."""
    return sys.executable or shutil.which("python3") or "python3"


class _BaseSandbox:
    """Common ``run`` flow: fresh work dir, files, setup scripts, main.py."""

    name = "base"

    def __init__(self, limits: SandboxLimits | None = None, **limit_kwargs: Any):
        self.limits = (limits or SandboxLimits()).model_copy(update=limit_kwargs)
        self._checked: tuple[bool, str] | None = None

    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:  # pragma: no cover
        """Run one ``python <script>`` in the prepared work dir (or override :meth:`_run_programs`)."""
        raise NotImplementedError

    def _run_programs(
        self, workdir: Path, scripts: list[str], timeout_s: float, output_files: list[str] | None
    ) -> tuple[list[ExecResult], dict[str, str]]:
        """Run ``scripts`` in order, stopping after the first that fails: their results and the output files read."""
        results = []
        for script in scripts:
            res = self._run_script(workdir, script, timeout_s)
            results.append(res)
            if res.exit_code != 0 or res.killed_reason:
                break
        got: dict[str, str] = {}
        for name in output_files or []:  # names checked by run()
            p = workdir / name
            with contextlib.suppress(OSError):  # symlinks planted by the program are not followed
                if not p.is_symlink() and p.is_file() and p.resolve().is_relative_to(workdir.resolve()):
                    got[name] = _capped(p.read_bytes(), self.limits.output_bytes)
        return results, got

    def run(
        self,
        code: str,
        *,
        files: dict[str, str | bytes] | None = None,
        setup_scripts: list[str] | None = None,
        timeout_s: float | None = None,
        output_files: list[str] | None = None,
    ) -> ExecResult:
        """Run ``code`` as ``main.py`` (:meth:`~sgieval.tools.Sandbox.run`; default ``timeout_s``: the limits')."""
        timeout = float(timeout_s if timeout_s is not None else self.limits.timeout_s)
        if files and "main.py" in files:
            raise InputError(
                "'main.py' is reserved for the program code", what="files['main.py']", fix="rename the file"
            )
        for s in setup_scripts or []:
            if s not in (files or {}):
                raise InputError(
                    f"setup script {s!r} is not among the files", what="setup_scripts", fix="pass it in files"
                )
        scripts = [_check_name(s, "setup_scripts") for s in setup_scripts or []] + ["main.py"]
        for name in output_files or []:
            _check_name(name, f"output_files[{name!r}]")
        # the default temporary folder, never /dev/shm (whose files would hold host RAM outside the memory limit)
        workdir = Path(tempfile.mkdtemp(prefix="sgieval-sbx-"))
        try:
            for name, content in {**(files or {}), "main.py": code}.items():
                dest = workdir / _check_name(name, f"files[{name!r}]")
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(content if isinstance(content, bytes) else str(content).encode("utf-8"))
            results, got = self._run_programs(workdir, scripts, timeout, output_files)
            res = results[-1]
            if len(results) < len(scripts):
                return res.model_copy(update={"setup_failed": True})
            res.files = got
            return res
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def check(self) -> None:
        """Run ``print('ok')`` once (cached): SandboxUnavailableError with the reason when the sandbox cannot."""
        if self._checked is None:
            try:
                res = self.run("print('ok')", timeout_s=30)
                out = (res.stderr.strip() or res.stdout.strip())[-300:] or "no output"
                ok = res.exit_code == 0 and res.stdout == "ok\n"
                self._checked = (ok, "ok" if ok else f"exit code {res.exit_code}: {out}")
            except ToolError as e:  # SandboxUnavailableError, or no uid / lock folder to be had
                self._checked = (False, e.message)
        ok, why = self._checked
        if not ok:
            raise SandboxUnavailableError(
                f"the {self.name} sandbox cannot run a trivial program ({why})",
                what=f"sandbox backend {self.name!r}",
                fix="see the reason; for a checkout or venv in an unusual place, "
                "check that bwrap can bind it, or use --sandbox e2b",
            )


class UnavailableSandbox:
    """A sandbox that failed its start check: every ``run`` raises SandboxUnavailableError with the reason (the item
    is then ``infra_error``, never a failed test)."""

    def __init__(self, name: str, error: SandboxUnavailableError):
        self.name = name
        self.error = error

    def run(self, code: str, **_: Any) -> ExecResult:
        """Refuse to run: the sandbox could not start.

        Args:
            code: the program that would have run.
            _: the other :meth:`Sandbox.run` arguments, ignored.

        Returns:
            Never.

        Raises:
            SandboxUnavailableError: always, with the reason.
        """
        raise SandboxUnavailableError(self.error.message, what=self.error.what, fix=self.error.fix)

    def check(self) -> None:
        self.run("")
