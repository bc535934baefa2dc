"""Sandboxed Python execution: bubblewrap (local), E2B (cloud), unsafe local.

Issue 4, item 1.  Every backend implements :class:`~sgieval.tools.base.Sandbox`
and returns an :class:`~sgieval.tools.base.ExecResult`.

Bubblewrap layout (what the untrusted program sees)::

    /usr, /lib*, /bin, /sbin       read-only system binaries and libraries
    /etc/ld.so.cache (+ few)       read-only; no /etc/shadow, /etc/passwd of the host
    <sys.prefix>, <sys.base_prefix> the project's interpreter and virtual environment, read-only
    /proc, /dev                    fresh (pid namespace), minimal devices
    /tmp                           private tmpfs (``tmp_mb``)
    /sandbox                       the fresh work directory (cwd, HOME), on tmpfs (/dev/shm) when present

Namespaces: net (no network, only a down loopback), pid, ipc, uts, cgroup.  The
program runs as an unprivileged uid (``setpriv``, one uid per concurrent run so
``RLIMIT_NPROC`` is per run) with no capabilities and ``no_new_privs``; limits
via ``prlimit``: address space (``memory_mb``, default 2048 MiB), CPU seconds,
processes (``max_processes``), file size (``max_file_mb``), no core dumps.
Wall time (``timeout_s``, default 60 s) and output (``output_bytes`` per stream,
default 1 MiB) are enforced by the host, which kills bwrap; ``--die-with-parent``
and the pid namespace then take every sandboxed process down with it.

``killed_reason`` (ExecResult): ``timeout`` wall limit fired; ``cpu_time``
SIGXCPU from RLIMIT_CPU; ``memory`` MemoryError / allocation failure under
RLIMIT_AS; ``output_limit`` a stream passed ``output_bytes``; ``process_limit``
fork/thread creation refused by RLIMIT_NPROC; ``signal`` any other signal death.
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

from ..core import InputError, SandboxUnavailableError, ToolError
from .base import ExecResult, Sandbox

__all__ = [
    "SandboxLimits",
    "BubblewrapSandbox",
    "UnsafeLocalSandbox",
    "E2BSandbox",
    "get_sandbox",
    "bwrap_status",
    "TRUNCATION_MARKER",
    "RunPythonInput",
    "make_run_python_tool",
    "processes_of_uid",
]

TRUNCATION_MARKER = "\n[sgieval sandbox: output truncated at {limit} bytes]\n"
SANDBOX_WORKDIR = "/sandbox"
_BOOT_MOUNT = "/.sgieval"
_MIB = 1024 * 1024


class SandboxLimits(BaseModel):
    """Resource limits of one sandboxed program (each setup script and the main
    program get them separately).

    ``memory_mb`` address-space limit in MiB (RLIMIT_AS; default 2048);
    ``timeout_s`` wall seconds (default 60; ``run(timeout_s=...)`` overrides);
    ``cpu_time_s`` CPU seconds (RLIMIT_CPU; None: ceil of the wall timeout);
    ``output_bytes`` per stream (stdout, stderr; default 1 MiB), beyond which
    the run is killed and the text truncated with :data:`TRUNCATION_MARKER`;
    ``max_processes`` processes + threads of the sandbox uid (RLIMIT_NPROC;
    default 64); ``max_file_mb`` largest file the program may write
    (RLIMIT_FSIZE; default 64); ``tmp_mb`` size of the private /tmp tmpfs.
    """

    memory_mb: int = Field(2048, ge=64)
    timeout_s: float = Field(60.0, gt=0)
    cpu_time_s: float | None = Field(None, gt=0)
    output_bytes: int = Field(_MIB, ge=1024)
    max_processes: int = Field(64, ge=4)
    max_file_mb: int = Field(64, ge=1)
    tmp_mb: int = Field(64, ge=1)

    def cpu_seconds(self, timeout_s: float) -> int:
        return int(math.ceil(self.cpu_time_s if self.cpu_time_s is not None else timeout_s))


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


def _execute(
    argv: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    timeout_s: float,
    output_bytes: int,
    grace_s: float = 0.5,
    peak_pipe: tuple[int, int] | None = None,
) -> _Raw:
    """Run ``argv`` in its own session, stream stdout/stderr with a byte cap,
    kill the process group (SIGKILL) on wall timeout or output overflow, and
    reap it with ``wait4`` (for peak RSS).  Never raises on the child's
    behaviour; raises OSError only when ``argv[0]`` cannot be started.

    ``peak_pipe`` (read fd, write fd): the write end is passed to the child
    (see :data:`_PEAK_SITECUSTOMIZE`), which reports its peak RSS in KiB there.
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
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    deadline = t0 + timeout_s
    exited = False
    open_streams = 2

    def kill() -> None:
        raw.killed_by_host = True
        for target in (lambda: os.killpg(proc.pid, signal.SIGKILL), proc.kill):
            try:
                target()
            except (ProcessLookupError, PermissionError, OSError):
                pass

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
            wait = deadline - now
            if pidfd is None and not exited:
                wait = min(wait, 0.02)
            events = sel.select(wait)
            if pidfd is None and not exited and proc.poll() is not None:
                exited = True
                deadline = min(deadline, time.perf_counter() + grace_s)
            for key, _ in events:
                if key.data == "exit":
                    sel.unregister(key.fileobj)
                    exited = True
                    # Descendants outside the namespace (unsafe backend) may
                    # keep the pipes open: give them a short grace, then kill.
                    deadline = min(deadline, time.perf_counter() + grace_s)
                    continue
                data = os.read(key.fileobj.fileno(), 65536)
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
        try:
            _, status = os.waitpid(proc.pid, 0)
            raw.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # pragma: no cover - already reaped
            raw.returncode = proc.returncode
        proc.returncode = raw.returncode
        raw.wall_s = time.perf_counter() - t0
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass
        for f in (proc.stdout, proc.stderr):
            try:
                f.close()
            except OSError:
                pass
        if pidfd is not None:
            os.close(pidfd)
        if peak_pipe:
            raw.peak_kb = _read_peak(peak_pipe[0])
    raw.stdout = bytes(bufs["stdout"])
    raw.stderr = bytes(bufs["stderr"])
    return raw


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
    """A read-only-for-others directory holding the sandbox sitecustomize."""
    global _BOOT_DIR
    with _BOOT_LOCK:
        if _BOOT_DIR is None or not os.path.isdir(_BOOT_DIR):
            d = tempfile.mkdtemp(prefix="sgieval-boot-")
            Path(d, "sitecustomize.py").write_text(_PEAK_SITECUSTOMIZE, encoding="utf-8")
            os.chmod(d, 0o755)
            os.chmod(Path(d, "sitecustomize.py"), 0o644)
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
    text = data.decode("utf-8", errors="replace")
    if truncated:
        text += TRUNCATION_MARKER.format(limit=limit)
    return text


def _classify(raw: _Raw, exit_code: int | None, stderr: str) -> str | None:
    """Name the limit that ended the run (ExecResult.killed_reason), or None."""
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
    return ExecResult(
        stdout=stdout,
        stderr=stderr,
        exit_code=exit_code,
        wall_time_s=round(raw.wall_s, 6),
        peak_memory_mb=round(raw.peak_kb / 1024.0, 3) if raw.peak_kb else None,
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
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


class _BaseSandbox:
    """Common ``run`` flow: fresh work dir, files, setup scripts, main.py."""

    name = "base"

    def __init__(self, limits: SandboxLimits | None = None, **limit_kwargs: Any):
        self.limits = (limits or SandboxLimits()).model_copy(update=limit_kwargs)

    # subclasses: run one ``python <script>`` in the prepared work dir
    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:  # pragma: no cover
        raise NotImplementedError

    def _prepare(self, workdir: Path) -> None:
        pass

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
        ``ExecResult.files`` after the main program.  Raises InputError for bad
        file names, SandboxUnavailableError when the backend cannot start.
        """
        timeout = float(timeout_s if timeout_s is not None else self.limits.timeout_s)
        if files and "main.py" in files:
            raise InputError("'main.py' is reserved for the program code", what="files['main.py']", fix="rename the file")
        for s in setup_scripts or []:
            if s not in (files or {}):
                raise InputError(f"setup script {s!r} is not among the files", what="setup_scripts", fix="pass it in files")
        workdir = Path(tempfile.mkdtemp(prefix="sgieval-sbx-", dir=_work_root()))
        try:
            _write_files(workdir, files)
            (workdir / "main.py").write_text(code, encoding="utf-8")
            self._prepare(workdir)
            for script in setup_scripts or []:
                res = self._run_script(workdir, _check_name(script, "setup_scripts"), timeout)
                if res.exit_code != 0 or res.killed_reason:
                    return res.model_copy(update={"setup_failed": True})
            res = self._run_script(workdir, "main.py", timeout)
            res.files = _read_outputs(workdir, output_files, self.limits.output_bytes)
            return res
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


# -------------------------------------------------------------------- bubblewrap
_UID_LOCK = threading.Lock()
_UIDS_IN_USE: set[int] = set()
DEFAULT_UIDS = range(3_900_000, 3_900_256)
"""Sandbox uids (not in /etc/passwd): one per concurrent run in this process."""

_BWRAP_PROBE: dict[tuple, tuple[bool, str]] = {}


def _bind_args(paths: list[str]) -> list[str]:
    """``--ro-bind`` each path (deduplicated, nested ones dropped), creating
    missing parent directories with mode 0755 so the sandbox uid can traverse
    them (bwrap would otherwise copy restrictive modes such as /root's 0700)."""
    uniq: list[str] = []
    for p in sorted({os.path.abspath(p) for p in paths if p and os.path.exists(p)}, key=len):
        if not any(p == u or p.startswith(u.rstrip("/") + "/") for u in uniq):
            uniq.append(p)
    args: list[str] = []
    made: set[str] = {"/"}
    top_links = {"/bin", "/lib", "/lib64", "/sbin", "/lib32", "/libx32"}
    for p in uniq:
        parents = list(reversed(PurePosixPath(p).parents))
        for parent in parents:
            s = str(parent)
            if s in made or s in top_links:
                continue
            args += ["--perms", "0755", "--dir", s]
            made.add(s)
        args += ["--ro-bind", p, p]
        made.add(p)
    return args


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for d in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        p = Path("/") / d
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    args += ["--perms", "0755", "--dir", "/etc"]
    for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives"):
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    return args


def _bwrap_python_paths() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    real = os.path.realpath(_python())
    paths.add(str(Path(real).parent.parent))
    return sorted(p for p in paths if p and not p.startswith("/usr/"))  # /usr is bound whole


class BubblewrapSandbox(_BaseSandbox):
    """Local sandbox on bubblewrap (see the module docstring for the layout).

    ``uids``: pool of unprivileged uids used when running as root (one per
    concurrent run; default :data:`DEFAULT_UIDS`).  When not root, bwrap makes
    a user namespace and the program keeps the caller's uid (RLIMIT_NPROC then
    counts the caller's processes: the limit is raised by their current count).
    Raises SandboxUnavailableError at construction when bwrap cannot start.
    """

    name = "bubblewrap"

    def __init__(self, limits: SandboxLimits | None = None, *, uids: range | list[int] | None = None,
                 bwrap: str | None = None, **limit_kwargs: Any):
        super().__init__(limits, **limit_kwargs)
        self.uids = list(uids if uids is not None else DEFAULT_UIDS)
        self.bwrap = bwrap or shutil.which("bwrap") or "bwrap"
        self.python = _python()
        self.is_root = os.geteuid() == 0
        ok, why = bwrap_status(self.bwrap)
        if not ok:
            raise SandboxUnavailableError(
                f"bubblewrap cannot start: {why}",
                what="sandbox backend 'bubblewrap'",
                fix="install it (`apt-get install -y bubblewrap`), set E2B_API_KEY for the E2B backend, "
                "or pass --unsafe-local-exec to run model code without isolation",
            )
        self._static = self._static_args()

    def _static_args(self) -> list[str]:
        ns = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if not self.is_root:
            ns = ["--unshare-user", "--disable-userns"] + ns
        return [
            self.bwrap, *ns, "--die-with-parent", "--new-session", "--hostname", "sandbox",
            *_system_binds(),
            *_bind_args(_bwrap_python_paths()),
            "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--size", str(self.limits.tmp_mb * _MIB), "--tmpfs", "/dev/shm",
            "--ro-bind", _boot_dir(), _BOOT_MOUNT,
            "--perms", "1777", "--size", str(self.limits.tmp_mb * _MIB), "--tmpfs", "/tmp",
            "--clearenv",
        ]

    def _acquire_uid(self) -> int:
        with _UID_LOCK:
            for u in self.uids:
                if u not in _UIDS_IN_USE:
                    _UIDS_IN_USE.add(u)
                    return u
        raise ToolError(f"all {len(self.uids)} sandbox uids are busy", what="BubblewrapSandbox.uids",
                        fix="lower the concurrency or pass a larger uid range")

    def _prlimit(self, timeout_s: float, nproc: int) -> list[str]:
        L = self.limits
        cpu = L.cpu_seconds(timeout_s)
        return [
            "prlimit", f"--as={L.memory_mb * _MIB}", f"--cpu={cpu}:{cpu + 1}", f"--nproc={nproc}",
            f"--fsize={L.max_file_mb * _MIB}", "--core=0", "--",
        ]

    def argv(self, workdir: Path, script: str, timeout_s: float, uid: int | None, peak_fd: int | None = None) -> list[str]:
        """The full bwrap command line for one program (for inspection/tests).

        Chain inside the namespaces (bwrap's own reaper is pid 1): setpriv
        (drop to ``uid``, no capabilities) -> prlimit -> python script.
        """
        args = list(self._static)
        extra = {"PYTHONPATH": _BOOT_MOUNT}
        if peak_fd is not None:
            extra["SGIEVAL_PEAK_FD"] = str(peak_fd)
        for k, v in _sandbox_env(extra).items():
            args += ["--setenv", k, v]
        args += ["--bind", str(workdir), SANDBOX_WORKDIR, "--chdir", SANDBOX_WORKDIR]
        if uid is not None:
            args += [
                "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all", "--",
            ]
            nproc = self.limits.max_processes
        else:
            nproc = self.limits.max_processes + _count_processes(os.getuid())
        args += self._prlimit(timeout_s, nproc)
        args += [self.python, "-X", "utf8", script]
        return args

    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:
        uid = self._acquire_uid() if self.is_root else None
        try:
            if uid is not None:
                _chown_tree(workdir, uid)
            pipe = os.pipe()
            try:
                argv = self.argv(workdir, script, timeout_s, uid, peak_fd=pipe[1])
            except BaseException:
                os.close(pipe[0]), os.close(pipe[1])
                raise
            raw = _execute(argv, env=None, cwd=None, timeout_s=timeout_s,
                           output_bytes=self.limits.output_bytes, peak_pipe=pipe)
            if uid is not None:
                # bwrap's exit (or its killing) tears the pid namespace down
                # asynchronously: forked children (a fork bomb, a detached
                # grandchild) can outlive it for a moment.  Kill and wait until
                # none is left before the uid is reused.
                _kill_uid(uid, wait_s=5.0)
        finally:
            if uid is not None:
                with _UID_LOCK:
                    _UIDS_IN_USE.discard(uid)
        code = raw.returncode
        # bwrap reports a signal death of the program as 128 + signal number.
        if code is not None and 128 < code < 160 and not raw.killed_by_host:
            code = -(code - 128)
        if raw.killed_by_host and code is not None and code < 0:
            code = -signal.SIGKILL
        return _to_result(raw, code, self.limits.output_bytes, self.name)


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            try:
                os.chown(os.path.join(dirpath, n), uid, uid, follow_symlinks=False)
            except OSError:
                pass


def processes_of_uid(uid: int) -> list[int]:
    """PIDs of live processes whose real uid is ``uid`` (reads /proc)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(d))
                        break
        except OSError:
            continue
    return pids


def _count_processes(uid: int) -> int:
    return len(processes_of_uid(uid))


def _kill_uid(uid: int, wait_s: float = 0.0) -> bool:
    """SIGKILL every process of ``uid``; poll up to ``wait_s`` seconds until
    none is left.  True when none is left."""
    end = time.monotonic() + wait_s
    delay = 0.001
    while True:
        pids = processes_of_uid(uid)
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if time.monotonic() >= end:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def bwrap_status(bwrap: str | None = None) -> tuple[bool, str]:
    """(True, version) when bubblewrap can start a sandbox with the options
    used here, else (False, reason).  Cached per binary."""
    exe = bwrap or shutil.which("bwrap")
    if not exe or not os.path.exists(exe):
        return False, "the `bwrap` executable is not installed"
    key = (exe, os.geteuid())
    if key in _BWRAP_PROBE:
        return _BWRAP_PROBE[key]
    ns = ["--unshare-net", "--unshare-pid"]
    if os.geteuid() != 0:
        ns = ["--unshare-user"] + ns
    try:
        p = subprocess.run([exe, *ns, "--die-with-parent", *_system_binds(), "--proc", "/proc", "--dev", "/dev", "true"],
                           capture_output=True, timeout=10)
        ok = p.returncode == 0
        why = "ok" if ok else (p.stderr.decode(errors="replace").strip() or f"exit code {p.returncode}")
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why = False, str(e)
    _BWRAP_PROBE[key] = (ok, why)
    return ok, why


# ------------------------------------------------------------------ unsafe local
class UnsafeLocalSandbox(_BaseSandbox):
    """Plain subprocess with rlimits (``prlimit``) in a temporary directory.

    NO isolation: the program sees the network and every file the caller can
    read.  Only with an explicit ``--unsafe-local-exec``; ExecResult.backend is
    ``"unsafe-local"`` so run headers can say so.  The process group is killed
    on timeout and after the program exits.
    """

    name = "unsafe-local"

    def _run_script(self, workdir: Path, script: str, timeout_s: float) -> ExecResult:
        L = self.limits
        cpu = L.cpu_seconds(timeout_s)
        nproc = L.max_processes + _count_processes(os.getuid())
        argv = ["prlimit", f"--as={L.memory_mb * _MIB}", f"--cpu={cpu}:{cpu + 1}", f"--nproc={nproc}",
                f"--fsize={L.max_file_mb * _MIB}", "--core=0", "--", _python(), "-X", "utf8", script]
        if not shutil.which("prlimit"):  # pragma: no cover
            raise SandboxUnavailableError("`prlimit` (util-linux) is missing", what="unsafe-local sandbox",
                                          fix="apt-get install -y util-linux")
        pipe = os.pipe()
        env = _sandbox_env({"HOME": str(workdir), "TMPDIR": str(workdir), "MPLCONFIGDIR": str(workdir / ".mpl"),
                            "PYTHONPATH": _boot_dir(), "SGIEVAL_PEAK_FD": str(pipe[1])})
        raw = _execute(argv, env=env, cwd=str(workdir), timeout_s=timeout_s, output_bytes=L.output_bytes,
                       peak_pipe=pipe)
        code = raw.returncode
        return _to_result(raw, code, L.output_bytes, self.name)


# --------------------------------------------------------------------------- E2B
class E2BSandbox(_BaseSandbox):
    """E2B cloud sandbox (``e2b-code-interpreter``): one fresh microVM per run.

    Needs ``E2B_API_KEY`` (or ``api_key``).  Files are uploaded to the sandbox
    home, setup scripts and ``main.py`` run with ``python``; wall time is
    enforced by E2B (``timeout_s``); output is truncated to ``output_bytes``.
    ``peak_memory_mb`` is not known (None).  Raises SandboxUnavailableError
    without a key or when the service cannot be reached.
    """

    name = "e2b"

    def __init__(self, limits: SandboxLimits | None = None, *, api_key: str | None = None,
                 template: str | None = None, **limit_kwargs: Any):
        super().__init__(limits, **limit_kwargs)
        self.api_key = api_key or os.environ.get("E2B_API_KEY")
        self.template = template
        if not self.api_key:
            raise SandboxUnavailableError("E2B_API_KEY is not set", what="sandbox backend 'e2b'",
                                          fix="export E2B_API_KEY=... or use --sandbox bubblewrap")

    def run(self, code: str, *, files: dict[str, str | bytes] | None = None, setup_scripts: list[str] | None = None,
            timeout_s: float | None = None, output_files: list[str] | None = None) -> ExecResult:
        try:
            from e2b import CommandExitException
            from e2b import TimeoutException as E2BTimeout
            from e2b_code_interpreter import Sandbox as _E2B
        except ImportError as e:  # pragma: no cover
            raise SandboxUnavailableError(f"e2b-code-interpreter is not installed ({e})", what="sandbox backend 'e2b'",
                                          fix="pip install e2b-code-interpreter") from e
        timeout = float(timeout_s if timeout_s is not None else self.limits.timeout_s)
        limit = self.limits.output_bytes
        try:
            sbx = _E2B.create(template=self.template, api_key=self.api_key,
                              timeout=int(timeout * (2 + len(setup_scripts or []))) + 30)
        except Exception as e:  # noqa: BLE001 - any SDK/network failure
            raise SandboxUnavailableError(f"cannot create an E2B sandbox: {e}", what="sandbox backend 'e2b'",
                                          fix="check E2B_API_KEY and the network, or use --sandbox bubblewrap") from e
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
                raw = _Raw(stdout=(out or "").encode()[: limit + 1], stderr=(err or "").encode()[: limit + 1],
                           returncode=rc, wall_s=time.perf_counter() - t0, timed_out=timed_out)
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


# ----------------------------------------------------------------------- factory
_BACKENDS = ("auto", "bubblewrap", "bwrap", "e2b", "unsafe-local", "local")


def get_sandbox(backend: str = "auto", *, unsafe_local_exec: bool = False, **limits: Any) -> Sandbox:
    """Pick a sandbox backend.

    ``backend``: ``auto`` (E2B when ``E2B_API_KEY`` is set, else bubblewrap),
    ``bubblewrap``/``bwrap``, ``e2b``, or ``unsafe-local`` (needs
    ``unsafe_local_exec=True``).  ``limits``: :class:`SandboxLimits` fields
    (``memory_mb``, ``timeout_s``, ``cpu_time_s``, ``output_bytes``,
    ``max_processes``, ``max_file_mb``, ``tmp_mb``).  When bubblewrap cannot
    start: SandboxUnavailableError, unless ``unsafe_local_exec`` is True, in
    which case the plain-subprocess backend is returned (backend name
    ``"unsafe-local"``).  Raises InputError for an unknown backend name.
    """
    b = (backend or "auto").lower()
    if b not in _BACKENDS:
        raise InputError(f"unknown sandbox backend {backend!r}", what="--sandbox", fix=f"use one of {', '.join(_BACKENDS)}")
    lim = SandboxLimits(**limits)
    if b in ("unsafe-local", "local"):
        if not unsafe_local_exec:
            raise SandboxUnavailableError("the unsafe local backend runs model code without isolation",
                                          what="--sandbox unsafe-local", fix="add --unsafe-local-exec to allow it explicitly")
        return UnsafeLocalSandbox(lim)
    if b == "e2b" or (b == "auto" and os.environ.get("E2B_API_KEY")):
        return E2BSandbox(lim)
    try:
        return BubblewrapSandbox(lim)
    except SandboxUnavailableError:
        if unsafe_local_exec:
            return UnsafeLocalSandbox(lim)
        raise


# ------------------------------------------------------------- LangChain tool
class RunPythonInput(BaseModel):
    """Arguments of the ``run_python`` tool."""

    code: str = Field(description="Python source to run as main.py in a fresh, network-less sandbox")
    files: dict[str, str] = Field(default_factory=dict, description="extra text files (relative name -> content)")
    timeout_s: float = Field(30.0, gt=0, le=600, description="wall-time limit in seconds")
    output_files: list[str] = Field(default_factory=list, description="files to read back after the run")


def make_run_python_tool(sandbox: Sandbox):
    """LangChain ``run_python`` tool over ``sandbox``; returns the ExecResult
    as a dict (stdout, stderr, exit_code, wall_time_s, peak_memory_mb,
    timed_out, killed_reason, files, backend)."""
    from langchain_core.tools import StructuredTool

    def _run(code: str, files: dict[str, str] | None = None, timeout_s: float = 30.0,
             output_files: list[str] | None = None) -> dict[str, Any]:
        res = sandbox.run(code, files=files or None, timeout_s=timeout_s, output_files=output_files or None)
        return res.model_dump(mode="json")

    return StructuredTool.from_function(
        func=_run, name="run_python", args_schema=RunPythonInput,
        description="Run Python code (numpy, scipy, pandas, scikit-learn available) in an isolated sandbox "
        "without network; returns stdout, stderr, exit code and which limit killed it, if any.")
