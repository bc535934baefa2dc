"""What every sandbox backend shares: limits, the host-side process runner,
output decoding (capped, control characters escaped), file staging and the
common ``run`` flow.  Backends: :mod:`.bwrap`, :mod:`.local`, :mod:`.e2b`.

``killed_reason`` (ExecResult): ``timeout`` wall limit fired; ``cpu_time``
SIGXCPU from RLIMIT_CPU; ``memory`` the sandbox's processes together passed
``memory_mb`` (:class:`TreeWatch` killed them) or one allocation failed under
RLIMIT_AS (MemoryError); ``output_limit`` a stream passed ``output_bytes``;
``process_limit`` fork/thread creation refused by RLIMIT_NPROC; ``signal`` any
other signal death.

**The memory limit holds for the whole sandbox.**  RLIMIT_AS bounds each process
on its own, so three children of one program could each hold nearly the limit.
The host therefore watches the sandbox's process tree (:class:`TreeWatch`: every
descendant of the sandbox's first process, every process of its session, and
every process of its leased uid) and sums their resident memory (RSS) every
20 ms (every 5 ms past half the limit); over ``memory_mb`` it kills them all
and the run is reported as ``killed_reason="memory"``.  ``peak_memory_mb`` is
the largest sum seen (or the program's own peak RSS when that is larger).  No
cgroup is used: it needs a delegated cgroup v2 subtree, which sgieval does not
assume (see the README's sandbox section).
"""

from __future__ import annotations

import atexit
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from ...core import InputError, SandboxUnavailableError, ToolError
from ...core import escape_control_chars
from ..base import ExecResult

TRUNCATION_MARKER = "\n[sgieval sandbox: output truncated at {limit} bytes]\n"
SANDBOX_WORKDIR = "/sandbox"
_BOOT_MOUNT = "/.sgieval"
_MIB = 1024 * 1024


class SandboxLimits(BaseModel):
    """Resource limits of one sandboxed program (each setup script and the main
    program get them separately).

    ``memory_mb`` MiB for the whole sandbox (default 2048): the resident memory of all its processes
    together (:class:`TreeWatch`), and the address space of each (RLIMIT_AS);
    ``timeout_s`` wall seconds (default 60; ``run(timeout_s=...)`` overrides);
    ``cpu_time_s`` CPU seconds (RLIMIT_CPU; None: ceil of the wall timeout + 1 s, so a single-threaded
    busy loop is stopped by the wall timeout, reported as ``timeout``, and not by a race between the two;
    a multi-threaded program can still pass its CPU seconds first);
    ``output_bytes`` per stream (stdout, stderr; default 1 MiB), beyond which
    the run is killed and the text truncated with :data:`TRUNCATION_MARKER`;
    ``max_processes`` processes + threads of the sandbox uid (RLIMIT_NPROC;
    default 16: a program, its few workers and their threads); ``max_file_mb`` largest file the program may write
    (RLIMIT_FSIZE; default 64); ``tmp_mb`` size of the private /tmp tmpfs.
    """

    memory_mb: int = Field(default=2048, ge=64)
    timeout_s: float = Field(default=60.0, gt=0)
    cpu_time_s: float | None = Field(default=None, gt=0)
    output_bytes: int = Field(default=_MIB, ge=1024)
    max_processes: int = Field(default=16, ge=4)
    max_file_mb: int = Field(default=64, ge=1)
    tmp_mb: int = Field(default=64, ge=1)

    def cpu_seconds(self, timeout_s: float) -> int:
        """RLIMIT_CPU for one run (see the class docstring).

        Args:
            timeout_s: the run's wall limit in seconds (> 0).

        Returns:
            CPU seconds: ``cpu_time_s`` rounded up when it is set, else ``timeout_s`` rounded up plus 1.
        """
        return int(math.ceil(self.cpu_time_s)) if self.cpu_time_s is not None else int(math.ceil(timeout_s)) + 1


# ----------------------------------------------------------------- process core
@dataclass
class _Raw:
    stdout: bytes = b""
    stderr: bytes = b""
    returncode: int | None = None
    wall_s: float = 0.0
    timed_out: bool = False
    output_exceeded: bool = False
    killed_by_host: bool = False
    truncated: dict[str, bool] = field(default_factory=dict)
    peak_kb: int | None = None
    memory_exceeded: bool = False
    tree_peak_kb: int | None = None


class TreeWatch:
    """The resident memory of a sandbox's processes, summed, against a limit (see the module docstring).

    ``root``: the pid the host started (bwrap, or the program itself); the tree is every descendant of it
    (parent links in ``/proc/<pid>/stat``), every process whose session is ``root``'s (an orphan of the
    unsafe backend is reparented outside the tree but keeps its session unless it calls ``setsid``) and,
    with ``uid``, every process of that uid (the bubblewrap backend's leased uid).  ``limit_mb``: MiB
    (None: only measure).  ``interval_s`` between samples (a fifth of it once past half the limit).

    :meth:`due` says when to sample, :meth:`sample` sums the tree (bytes) and records the peak;
    :meth:`exceeded` is True once a sample passed the limit; :meth:`kill` SIGKILLs every process of the
    tree."""

    def __init__(self, root: int, limit_mb: int | None, *, uid: int | None = None, interval_s: float = 0.02):
        self.root = root
        self.limit = limit_mb * _MIB if limit_mb is not None else None
        self.uid = uid
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.exceeded = False
        self.pids: list[int] = []
        self._next = 0.0
        self._page = os.sysconf("SC_PAGE_SIZE")

    def due(self, now: float) -> float:
        """Seconds until the next sample is due (<= 0: now)."""
        return self._next - now

    def tree(self) -> dict[int, int]:
        """{pid: resident bytes} of every live process of the tree."""
        parent: dict[int, int] = {}
        rss: dict[int, int] = {}
        members: set[int] = {self.root}
        try:
            entries = os.listdir("/proc")
        except OSError:  # pragma: no cover - no /proc
            return {}
        for d in entries:
            if not d.isdigit():
                continue
            pid = int(d)
            try:
                with open(f"/proc/{d}/stat", "rb") as f:
                    stat = f.read()
                if self.uid is not None and os.stat(f"/proc/{d}").st_uid == self.uid:
                    members.add(pid)
            except OSError:
                continue
            fields = stat.rsplit(b")", 1)[-1].split()
            # after the command name: state ppid pgrp session ... rss is field 24 of stat(5)
            if len(fields) < 22:
                continue
            parent[pid] = int(fields[1])
            rss[pid] = int(fields[21]) * self._page
            if int(fields[3]) == self.root:
                members.add(pid)
        children: dict[int, list[int]] = {}
        for pid, pp in parent.items():
            children.setdefault(pp, []).append(pid)
        todo = list(members)
        while todo:
            for c in children.get(todo.pop(), ()):
                if c not in members:
                    members.add(c)
                    todo.append(c)
        return {pid: rss[pid] for pid in members if pid in rss}

    def sample(self, now: float) -> int:
        """Sum the tree's resident memory (bytes) now (``time.perf_counter`` seconds), record the peak and
        whether the limit is passed; returns the sum."""
        got = self.tree()
        self.pids = list(got)
        total = sum(got.values())
        self.peak_bytes = max(self.peak_bytes, total)
        if self.limit is not None and total > self.limit:
            self.exceeded = True
        near = self.limit is not None and total > self.limit // 2
        self._next = now + (self.interval_s / 4 if near else self.interval_s)
        return total

    def kill(self) -> None:
        """SIGKILL every process of the tree as last sampled, and the tree's root."""
        for pid in {self.root, *self.pids}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _execute(
    argv: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    timeout_s: float,
    output_bytes: int,
    grace_s: float = 0.5,
    peak_pipe: tuple[int, int] | None = None,
    memory_mb: int | None = None,
) -> _Raw:
    """Run ``argv`` in its own session, stream stdout/stderr with a byte cap,
    kill the process group (SIGKILL) on wall timeout or output overflow, and
    reap it with ``wait4`` (for peak RSS).  Never raises on the child's
    behaviour; raises OSError only when ``argv[0]`` cannot be started.

    ``peak_pipe`` (read fd, write fd): the write end is passed to the child
    (see :data:`_PEAK_SITECUSTOMIZE`), which reports its peak RSS in KiB there.
    ``memory_mb``: the limit of the whole process tree (:class:`TreeWatch`),
    None: not watched.
    """
    raw = _Raw()
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
            pass_fds=(peak_pipe[1],) if peak_pipe else (),
        )
    finally:
        if peak_pipe:
            os.close(peak_pipe[1])
    bufs = {"stdout": bytearray(), "stderr": bytearray()}
    sel = selectors.DefaultSelector()
    pidfd = None
    try:
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, "exit")
    except (AttributeError, OSError):  # pragma: no cover - kernels < 5.3
        pidfd = None
    assert proc.stdout is not None and proc.stderr is not None  # started with stdout=stderr=PIPE
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    deadline = t0 + timeout_s
    exited = False
    open_streams = 2
    watch = TreeWatch(proc.pid, memory_mb) if memory_mb is not None else None

    def kill() -> None:
        raw.killed_by_host = True
        for target in (lambda: os.killpg(proc.pid, signal.SIGKILL), proc.kill):
            try:
                target()
            except (ProcessLookupError, PermissionError, OSError):
                pass
        if watch is not None:
            watch.kill()

    try:
        while True:
            now = time.perf_counter()
            if now >= deadline:
                if not exited:
                    raw.timed_out = True
                kill()
                break
            if exited and open_streams == 0:
                break
            if watch is not None and watch.due(now) <= 0:
                watch.sample(now)
                if watch.exceeded:
                    raw.memory_exceeded = True
                    kill()
                    break
            events, exited, deadline = _watched_round(sel, proc, pidfd, now, deadline, exited, grace_s, watch)
            for key, _ in events:
                if key.data == "exit":
                    sel.unregister(key.fileobj)
                    exited = True
                    # Descendants outside the namespace (unsafe backend) may
                    # keep the pipes open: give them a short grace, then kill.
                    deadline = min(deadline, time.perf_counter() + grace_s)
                    continue
                data = os.read(key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno(), 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                buf = bufs[key.data]
                room = output_bytes - len(buf)
                if len(data) > room:
                    buf.extend(data[: max(room, 0)])
                    raw.truncated[key.data] = True
                    raw.output_exceeded = True
                    kill()
                    break
                buf.extend(data)
            if raw.output_exceeded:
                break
    finally:
        sel.close()
        # Reap, then make sure no member of the group survives.
        raw.returncode = _reap(proc)
        raw.wall_s = time.perf_counter() - t0
        _end_group(proc, pidfd)
        if peak_pipe:
            raw.peak_kb = _read_peak(peak_pipe[0])
        if watch is not None:
            raw.tree_peak_kb = watch.peak_bytes // 1024
    raw.stdout = bytes(bufs["stdout"])
    raw.stderr = bytes(bufs["stderr"])
    return raw


def _select_round(
    sel: selectors.BaseSelector,
    proc: subprocess.Popen,
    pidfd: int | None,
    now: float,
    deadline: float,
    exited: bool,
    grace_s: float,
) -> tuple[list, bool, float]:
    """One round of an output loop: the selector's events until ``deadline`` (``time.perf_counter`` seconds;
    every 20 ms when no ``pidfd`` tells the exit), then an exit seen by polling, after which the deadline is at
    most ``grace_s`` away.  Returns (events, exited, deadline)."""
    wait = deadline - now
    if pidfd is None and not exited:
        wait = min(wait, 0.02)
    events = sel.select(wait)
    if pidfd is None and not exited and proc.poll() is not None:
        exited = True
        deadline = min(deadline, time.perf_counter() + grace_s)
    return events, exited, deadline


def _watched_round(
    sel: selectors.BaseSelector,
    proc: subprocess.Popen,
    pidfd: int | None,
    now: float,
    deadline: float,
    exited: bool,
    grace_s: float,
    watch: "TreeWatch | None",
) -> tuple[list, bool, float]:
    """:func:`_select_round` that also returns when ``watch``'s next sample is due; returns (events, exited,
    deadline) as it does, ``deadline`` unchanged by the sample time."""
    if watch is None:
        return _select_round(sel, proc, pidfd, now, deadline, exited, grace_s)
    until = min(deadline, now + max(0.0, watch.due(now)))
    events, exited, got = _select_round(sel, proc, pidfd, now, until, exited, grace_s)
    return events, exited, (min(deadline, got) if got != until else deadline)


def _reap(proc: subprocess.Popen) -> int | None:
    """Wait for ``proc`` and set its ``returncode`` (a signal as its negative number); returns it."""
    try:
        _, status = os.waitpid(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    except ChildProcessError:  # pragma: no cover - already reaped
        pass
    return proc.returncode


def _end_group(proc: subprocess.Popen, pidfd: int | None) -> None:
    """After :func:`_reap`: SIGKILL whatever of ``proc``'s process group survives, close its pipes and ``pidfd``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    for f in (proc.stdout, proc.stderr):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass
    if pidfd is not None:
        os.close(pidfd)


def _read_peak(fd: int) -> int | None:
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, 64)
    except OSError:
        data = b""
    finally:
        os.close(fd)
    m = re.fullmatch(rb"(\d{1,12})\n", data)
    return int(m.group(1)) if m else None


_PEAK_SITECUSTOMIZE = """\
# sgieval sandbox: report the program's peak RSS (KiB) to the host at exit.
import atexit as _a, os as _o, resource as _r, stat as _s
_fd = _o.environ.pop("SGIEVAL_PEAK_FD", "")
if _fd.isdigit():
    _fd = int(_fd)
    try:
        _o.set_inheritable(_fd, False)
        _ino = _o.fstat(_fd).st_ino
    except OSError:
        _ino = None

    def _sgieval_peak(fd=_fd, ino=_ino):
        try:
            st = _o.fstat(fd)
            if ino is None or st.st_ino != ino or not _s.S_ISFIFO(st.st_mode):
                return
            kb = max(_r.getrusage(_r.RUSAGE_SELF).ru_maxrss, _r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss)
            _o.write(fd, b"%d\\n" % kb)
            _o.close(fd)
        except Exception:
            pass

    if _ino is not None:
        _a.register(_sgieval_peak)
"""
"""``sitecustomize`` put on PYTHONPATH of sandboxed programs: peak memory is
read from the program itself, because ``wait4`` on bwrap would report the host
process's own high-water mark (inherited through vfork/exec)."""

_BOOT_DIR: str | None = None
_BOOT_LOCK = threading.Lock()


def _boot_dir() -> str:
    """A read-only-for-others directory holding the sandbox sitecustomize and
    the bubblewrap driver (bound read-only at ``/.sgieval`` inside bwrap)."""
    global _BOOT_DIR
    from .driver_src import DRIVER

    with _BOOT_LOCK:
        if _BOOT_DIR is None or not os.path.isdir(_BOOT_DIR):
            d = tempfile.mkdtemp(prefix="sgieval-boot-")
            for name, text in (("sitecustomize.py", _PEAK_SITECUSTOMIZE), ("driver.py", DRIVER)):
                Path(d, name).write_text(text, encoding="utf-8")
                os.chmod(Path(d, name), 0o644)
            os.chmod(d, 0o755)
            atexit.register(shutil.rmtree, d, True)
            _BOOT_DIR = d
        return _BOOT_DIR


_PROC_LIMIT_PAT = re.compile(
    r"BlockingIOError: \[Errno 11\] Resource temporarily unavailable"
    r"|can't start new thread|fork: retry: Resource temporarily unavailable"
    r"|fork: Resource temporarily unavailable|Cannot fork",
)
_MEMORY_PAT = re.compile(
    r"\bMemoryError\b|Unable to allocate|Cannot allocate memory|std::bad_alloc|out of memory",
)


def _decode(data: bytes, truncated: bool, limit: int) -> str:
    text = escape_control_chars(data.decode("utf-8", errors="replace"))
    if truncated:
        text += TRUNCATION_MARKER.format(limit=limit)
    return text


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
    if exit_code < 0:
        return "signal"
    return None


def _to_result(raw: _Raw, exit_code: int | None, limits_out: int, backend: str) -> ExecResult:
    stdout = _decode(raw.stdout, raw.truncated.get("stdout", False), limits_out)
    stderr = _decode(raw.stderr, raw.truncated.get("stderr", False), limits_out)
    reason = _classify(raw, exit_code, stderr)
    peak_kb = max(raw.peak_kb or 0, raw.tree_peak_kb or 0)
    return ExecResult(
        stdout=stdout,
        stderr=stderr,
        exit_code=exit_code,
        wall_time_s=round(raw.wall_s, 6),
        peak_memory_mb=round(peak_kb / 1024.0, 3) if peak_kb else None,
        timed_out=raw.timed_out,
        killed_reason=reason,  # type: ignore[arg-type]
        backend=backend,
    )


# -------------------------------------------------------------- shared helpers
def _check_name(name: str, what: str) -> str:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or name.startswith("~"):
        raise InputError(
            f"file name {name!r} must be a relative path inside the work directory",
            what=what,
            fix="use names like 'data.csv' or 'tests/test_a.py'",
        )
    return str(p)


def _write_files(workdir: Path, files: dict[str, str | bytes] | None) -> None:
    for name, content in (files or {}).items():
        rel = _check_name(name, f"files[{name!r}]")
        dest = workdir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            dest.write_bytes(content)
        else:
            dest.write_text(str(content), encoding="utf-8")


def _read_outputs(workdir: Path, names: list[str] | None, limit: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names or []:
        rel = _check_name(name, f"output_files[{name!r}]")
        p = workdir / rel
        try:
            # Do not follow symlinks planted by the program (they could point
            # at host files readable by the host process).
            if p.is_symlink() or not p.is_file() or not p.resolve().is_relative_to(workdir.resolve()):
                continue
            data = p.read_bytes()
        except OSError:
            continue
        out[name] = _decode(data[:limit], len(data) > limit, limit)
    return out


def _sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": SANDBOX_WORKDIR,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
    }
    env.update(extra or {})
    return env


def _python() -> str:
    """The project's interpreter (the virtual environment's ``python``)."""
    return sys.executable or shutil.which("python3") or "python3"


def _work_root() -> str | None:
    """Host folder for staged files: the default temporary folder (never
    ``/dev/shm``, whose files would hold host RAM outside the memory limit)."""
    return None


class _BaseSandbox:
    """Common ``run`` flow: fresh work dir, files, setup scripts, main.py."""

    name = "base"

    def __init__(self, limits: SandboxLimits | None = None, **limit_kwargs: Any):
        self.limits = (limits or SandboxLimits()).model_copy(update=limit_kwargs)
        self._checked: tuple[bool, str] | None = None

    # subclasses: run one ``python <script>`` in the prepared work dir ...
    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:  # pragma: no cover
        raise NotImplementedError

    # ... or override this to run the setup scripts and main.py together
    def _run_programs(
        self, workdir: Path, scripts: list[str], timeout_s: float, output_files: list[str] | None
    ) -> tuple[list[ExecResult], dict[str, str]]:
        """Run ``scripts`` (setup scripts, then main.py) in order, stopping
        after the first that fails; returns their results and the output files
        read after the last one."""
        results = []
        for script in scripts:
            res = self._run_script(workdir, script, timeout_s)
            results.append(res)
            if res.exit_code != 0 or res.killed_reason:
                break
        return results, _read_outputs(workdir, output_files, self.limits.output_bytes)

    def run(
        self,
        code: str,
        *,
        files: dict[str, str | bytes] | None = None,
        setup_scripts: list[str] | None = None,
        timeout_s: float | None = None,
        output_files: list[str] | None = None,
    ) -> ExecResult:
        """Run ``code`` as ``main.py`` in a fresh work directory.

        ``files``: name -> text/bytes written first (relative names; "main.py"
        is reserved); ``setup_scripts``: names among ``files`` run in order
        with the same limits (a failure returns that script's result with
        ``setup_failed=True``); ``timeout_s``: wall seconds per program
        (default ``limits.timeout_s``); ``output_files``: names read back into
        ``ExecResult.files`` after the main program.  Output text has its
        control characters escaped (:func:`escape_control_chars`).  Raises
        InputError for bad file names, SandboxUnavailableError when the
        backend cannot start (or cannot start its interpreter).
        """
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
        workdir = Path(tempfile.mkdtemp(prefix="sgieval-sbx-", dir=_work_root()))
        try:
            _write_files(workdir, files)
            (workdir / "main.py").write_text(code, encoding="utf-8")
            results, got = self._run_programs(workdir, scripts, timeout, output_files)
            res = results[-1]
            if len(results) < len(scripts):
                return res.model_copy(update={"setup_failed": True})
            res.files = got
            return res
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def check(self) -> None:
        """Start the sandbox once with a trivial program (``print('ok')``)
        and raise SandboxUnavailableError with the reason when it cannot run
        it (interpreter not visible inside, bwrap refusing an option...).
        The outcome is cached per sandbox object."""
        if self._checked is None:
            try:
                res = self.run("print('ok')", timeout_s=30)
                ok = res.exit_code == 0 and res.stdout == "ok\n"
                why = (
                    "ok"
                    if ok
                    else (
                        f"exit code {res.exit_code}: {(res.stderr.strip() or res.stdout.strip())[-300:] or 'no output'}"
                    )
                )
            except ToolError as e:  # SandboxUnavailableError, or no uid / lock folder to be had
                ok, why = False, e.message
            self._checked = (ok, why)
        ok, why = self._checked
        if not ok:
            raise SandboxUnavailableError(
                f"the {self.name} sandbox cannot run a trivial program ({why})",
                what=f"sandbox backend {self.name!r}",
                fix="see the reason; for a checkout or venv in an unusual place, "
                "check that bwrap can bind it, or use --sandbox e2b",
            )


class UnavailableSandbox:
    """Stands in for a sandbox that failed its start check (:meth:`_BaseSandbox.check`):
    every ``run`` raises SandboxUnavailableError with the reason, so each item
    that needs it is recorded as ``infra_error`` with that reason (never as a
    failed test)."""

    def __init__(self, name: str, error: SandboxUnavailableError):
        self.name = name
        self.error = error

    def run(self, code: str, **_: Any) -> ExecResult:
        """Refuse to run: the sandbox could not start.

        Args:
            code: the program that would have run.
            _: the other :meth:`Sandbox.run` arguments, ignored.

        Returns:
            Never returns.

        Raises:
            SandboxUnavailableError: always, with the reason the sandbox could not start.
        """
        raise SandboxUnavailableError(self.error.message, what=self.error.what, fix=self.error.fix)

    def check(self) -> None:
        self.run("")
