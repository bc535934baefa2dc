"""The bubblewrap backend: local isolation with Linux namespaces (net with only a down loopback, pid, ipc, uts, cgroup).

The program sees read-only /usr, /lib*, a few /etc files, the interpreter and venv (bound after /tmp, so a venv under
/tmp stays visible), the driver at /.sgieval and the staged inputs at /.sgieval-in; /tmp, /dev/shm and the work dir
/sandbox are private tmpfs. As root each run leases an unprivileged uid (``flock`` on a file of :func:`uid_lock_dir`,
dropped by the kernel when its holder dies) and runs under ``setpriv`` without capabilities, limits via ``prlimit``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from ...core import SandboxUnavailableError, ToolError
from ..base import ExecResult
from .common import _BOOT_MOUNT, SANDBOX_WORKDIR, SandboxLimits, _BaseSandbox, _boot_dir, _capped, _python
from .common import _sandbox_env, _to_result
from .process import _MIB, Follow, _count_processes, processes_of_uid

__all__ = ["BubblewrapSandbox", "DEFAULT_UIDS", "bwrap_status", "processes_of_uid", "uid_lock_dir"]

_INPUT_MOUNT = "/.sgieval-in"
DEFAULT_UIDS = range(3_900_000, 3_900_256)
"""Sandbox uids (not in /etc/passwd): one per concurrent run on the machine (taken with a lock file)."""

_BWRAP_PROBE: dict[tuple, tuple[bool, str]] = {}
_UID_WAIT_S = 60.0


def uid_lock_dir() -> Path:
    """The uid lock folder (in $XDG_RUNTIME_DIR, /run for root, else the temp folder), mode 0700; ToolError when it
    is not a directory owned by the caller."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        d = Path(runtime) / "sgieval-sandbox-uids"
    elif os.geteuid() == 0 and os.path.isdir("/run") and os.access("/run", os.W_OK):
        d = Path("/run/sgieval-sandbox-uids")
    else:
        d = Path(tempfile.gettempdir()) / f"sgieval-sandbox-uids-{os.geteuid()}"
    try:
        d.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(d)
    except OSError as e:
        raise ToolError(
            f"cannot create the sandbox uid lock folder {d}: {e}",
            what="sandbox uids",
            fix="set XDG_RUNTIME_DIR to a private writable folder",
        ) from e
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise ToolError(
            f"{d} is not a folder owned by uid {os.geteuid()}",
            what="sandbox uid lock folder",
            fix=f"remove {d}, or set XDG_RUNTIME_DIR to a private writable folder",
        )
    return d


def _lease_uid(uids: list[int], wait_s: float = _UID_WAIT_S) -> tuple[int, int]:
    """Lease the first free uid of ``uids`` as (uid, lock fd) in ``wait_s`` s (else ToolError), killing leftovers."""
    folder = uid_lock_dir()
    end = time.monotonic() + wait_s
    delay = 0.005
    while True:
        for u in uids:
            fd = os.open(folder / f"uid-{u}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            # a non-empty lock file: its last holder died (or failed) before cleaning up
            if os.fstat(fd).st_size and processes_of_uid(u):
                _kill_uid(u, wait_s=5.0)
            os.pwrite(fd, b"%d\n" % os.getpid(), 0)
            return u, fd
        if time.monotonic() >= end:
            raise ToolError(
                f"all {len(uids)} sandbox uids are busy (held by other runs for {wait_s:.0f} s)",
                what="BubblewrapSandbox.uids",
                fix="lower the concurrency or pass a larger uid range",
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _release(fd: int, clean: bool) -> None:
    """Give a leased uid back; ``clean``: no process of it is left (the next holder need not look for leftovers)."""
    try:
        if clean:
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _kill_uid(uid: int, wait_s: float = 0.0) -> bool:
    """SIGKILL every process of ``uid`` (a leased one); whether none is left after polling up to ``wait_s`` seconds."""
    end = time.monotonic() + wait_s
    delay = 0.001
    while True:
        pids = processes_of_uid(uid)
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() >= end:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _bind_args(paths: list[str], made: set[str] | None = None) -> list[str]:
    """``--ro-bind`` each path (deduplicated, nested dropped), missing parents made 0755 for the sandbox uid."""
    uniq: list[str] = []
    for p in sorted({os.path.abspath(p) for p in paths if p and os.path.exists(p)}, key=len):
        if not any(p == u or p.startswith(u.rstrip("/") + "/") for u in uniq):
            uniq.append(p)
    args: list[str] = []
    made = set(made or ()) | {"/"}
    top_links = {"/bin", "/lib", "/lib64", "/sbin", "/lib32", "/libx32"}
    for p in uniq:
        for parent in reversed(PurePosixPath(p).parents):
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


def _bwrap_python_paths(python: str) -> list[str]:
    """Folders bound read-only so ``python`` runs inside: this process's prefixes and ``python``'s installation."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {str(Path(f(python)).parent.parent) for f in (os.path.abspath, os.path.realpath)}
    return sorted(p for p in paths if p and p != "/" and not p.startswith("/usr/"))  # /usr is bound whole


def bwrap_status(bwrap: str | None = None) -> tuple[bool, str]:
    """Whether bubblewrap can start a sandbox with the options used here (cached per binary).

    Args:
        bwrap: the bwrap binary (default: found on PATH).

    Returns:
        ``(True, version)``, else ``(False, reason)``.
    """
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
        p = subprocess.run(
            [exe, *ns, "--die-with-parent", *_system_binds(), "--proc", "/proc", "--dev", "/dev", "true"],
            capture_output=True,
            timeout=10,
        )
        ok = p.returncode == 0
        why = "ok" if ok else (p.stderr.decode(errors="replace").strip() or f"exit code {p.returncode}")
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why = False, str(e)
    _BWRAP_PROBE[key] = (ok, why)
    return ok, why


class BubblewrapSandbox(_BaseSandbox):
    """Local sandbox on bubblewrap (module docstring); SandboxUnavailableError at construction when bwrap cannot start.
    ``uids``: leased per run when root (not root: the caller's uid in a user namespace); ``work_mb``: work dir tmpfs
    (default ``max_file_mb`` x 4, at least 256)."""

    name = "bubblewrap"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        uids: range | list[int] | None = None,
        work_mb: int | None = None,
        python: str | None = None,
        **limit_kwargs: Any,
    ):
        super().__init__(limits, **limit_kwargs)
        self.uids = list(uids if uids is not None else DEFAULT_UIDS)
        self.bwrap = shutil.which("bwrap") or "bwrap"
        self.python = python or _python()
        self.is_root = os.geteuid() == 0
        self.work_mb = int(work_mb if work_mb is not None else max(256, 4 * self.limits.max_file_mb))
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

        def tmpfs(path: str, mb: int) -> list[str]:
            return ["--perms", "1777", "--size", str(mb * _MIB), "--tmpfs", path]

        tmp = self.limits.tmp_mb
        return [
            *[self.bwrap, *ns, "--die-with-parent", "--new-session", "--hostname", "sandbox", *_system_binds()],
            *["--proc", "/proc", "--dev", "/dev", *tmpfs("/dev/shm", tmp), *tmpfs("/tmp", tmp)],
            # after the fresh /tmp and /dev/shm, so an interpreter or venv living there stays visible
            *_bind_args(_bwrap_python_paths(self.python), made={"/tmp", "/dev", "/dev/shm", "/proc"}),
            *["--ro-bind", _boot_dir(), _BOOT_MOUNT, *tmpfs(SANDBOX_WORKDIR, self.work_mb), "--clearenv"],
        ]

    def argv(self, staged: Path, spec: dict[str, Any], timeout_s: float, uid: int | None) -> list[str]:
        """The bwrap command line of one run: setpriv (drop to ``uid``, no capabilities) -> prlimit -> the driver.

        Args:
            staged: the staged work directory.
            spec: the driver's spec (programs, limits).
            timeout_s: wall seconds per program.
            uid: the user id inside (None: the caller's).

        Returns:
            The argv list.
        """
        args = list(self._static)
        for k, v in _sandbox_env({"PYTHONPATH": _BOOT_MOUNT}).items():
            args += ["--setenv", k, v]
        args += ["--ro-bind", str(staged), _INPUT_MOUNT, "--chdir", SANDBOX_WORKDIR]
        if uid is not None:
            args += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]
            args += ["--inh-caps=-all", "--bounding-set=-all", "--"]
            nproc = self.limits.max_processes + 1  # + the driver
        else:
            nproc = self.limits.max_processes + 1 + _count_processes(os.getuid())
        args += self.limits.prlimit(timeout_s, nproc)
        args += [self.python, "-X", "utf8", f"{_BOOT_MOUNT}/driver.py", json.dumps(spec)]
        return args

    def _run_programs(
        self, workdir: Path, scripts: list[str], timeout_s: float, output_files: list[str] | None
    ) -> tuple[list[ExecResult], dict[str, str]]:
        uid, lock = _lease_uid(self.uids) if self.is_root else (None, None)
        clean = False
        fds: list[int] = []
        try:
            _open_to_all(workdir)
            follow = self._follow(workdir, scripts, timeout_s, list(output_files or []), uid, fds)
            if uid is not None:
                # bwrap's exit (or its killing) tears the pid namespace down asynchronously: forked children
                # (a fork bomb, a detached grandchild) can outlive it for a moment.  Kill and wait until none is
                # left before the uid is handed to another run.
                clean = _kill_uid(uid, wait_s=5.0)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if lock is not None:
                _release(lock, clean)
        if follow.nostart or not follow.raws:
            boot_err = bytes(follow.bufs.get((len(scripts) - 1, "stderr"), b"")).decode("utf-8", "replace")
            rc = follow.proc.returncode
            reason = follow.nostart or boot_err.strip()[-500:] or (f"bwrap exit code {rc}" if rc else "")
            raise SandboxUnavailableError(
                "the sandbox could not start the program: "
                + (reason or "the sandbox exited before running any program"),
                what="sandbox backend 'bubblewrap'",
                fix="check that the interpreter and its virtual environment can be "
                "bound read-only (see `python -m sgieval.bench.sandbox`), or use --sandbox e2b",
            )
        limit = self.limits.output_bytes
        got = {}
        if len(follow.raws) == len(scripts):
            for name, b64 in follow.files.items():
                with contextlib.suppress(ValueError):  # binascii.Error included
                    got[name] = _capped(base64.b64decode(b64, validate=True), limit)
        return [_to_result(raw, limit, self.name) for raw in follow.raws], got

    def _follow(
        self, workdir: Path, scripts: list[str], timeout_s: float, outputs: list[str], uid: int | None, fds: list[int]
    ) -> Follow:
        """Start bwrap over ``workdir`` and follow its driver through ``scripts``; ``fds`` gets the host's pipe ends."""
        status_r, status_w = os.pipe()
        fds += [status_r, status_w]
        programs: list[dict[str, Any]] = []
        streams: dict[int, tuple[int, str]] = {}
        peaks: list[int] = []
        for i, script in enumerate(scripts):
            peak_r, peak_w = os.pipe()
            fds += [peak_r, peak_w]
            peaks.append(peak_r)
            if i == len(scripts) - 1:
                out_w, err_w = 1, 2
            else:
                (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
                fds += [out_r, out_w, err_r, err_w]
                streams[out_r], streams[err_r] = (i, "stdout"), (i, "stderr")
            programs.append({"script": script, "out": out_w, "err": err_w, "peak": peak_w})
        limit = self.limits.output_bytes
        spec = {"status": status_w, "input": _INPUT_MOUNT, "python": self.python, "programs": programs}
        argv = self.argv(workdir, {**spec, "outputs": outputs, "limit": limit}, timeout_s, uid)
        pass_fds = [status_w] + [x for p in programs for x in (p["out"], p["err"], p["peak"]) if x > 2]
        fds[:] = [fd for fd in fds if fd not in pass_fds]  # Follow closes these
        return Follow(
            argv,
            timeout_s=timeout_s,
            output_bytes=limit,
            pass_fds=pass_fds,
            peaks=peaks,
            streams=streams,
            status_r=status_r,
            n=len(scripts),
            status_cap=64 * 1024 + len(outputs) * (2 * limit + 1024),
            memory_mb=self.limits.memory_mb,
            uid=uid,
        ).run()


def _open_to_all(workdir: Path) -> None:
    """Folders 0755 and files 0644 under ``workdir``, so the sandbox uid can read the staged files."""
    for p in [workdir, *workdir.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
