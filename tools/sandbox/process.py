"""The host side of a sandboxed run: start the process, follow its output and limits, reap it.

The memory limit holds for the whole sandbox: :class:`TreeWatch` sums the RSS of its processes every 20 ms (5 ms past
half the limit) and kills them all over ``memory_mb``; no cgroup (it needs a delegated cgroup v2 subtree).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

_MIB = 1024 * 1024


@dataclass
class _Raw:
    """What the host saw of one program: output bytes, return code, wall seconds, limits hit, peaks (KiB)."""

    stdout: bytes = b""
    stderr: bytes = b""
    returncode: int | None = None
    wall_s: float = 0.0
    timed_out: bool = False
    output_exceeded: bool = False
    truncated: dict[str, bool] = field(default_factory=dict)
    peak_kb: int | None = None
    memory_exceeded: bool = False
    tree_peak_kb: int | None = None


def processes_of_uid(uid: int) -> list[int]:
    """PIDs of live processes whose real uid is ``uid`` (reads /proc)."""
    pids = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError), open(f"/proc/{d}/status") as fh:
            real = next((line.split()[1] for line in fh if line.startswith("Uid:")), None)
            if real is not None and int(real) == uid:
                pids.append(int(d))
    return pids


def _count_processes(uid: int) -> int:
    return len(processes_of_uid(uid))


class TreeWatch:
    """The summed resident memory of a sandbox's processes against ``limit_mb`` MiB (None: only measure): every
    descendant of ``root``, every process of its session and, with ``uid``, every process of that uid."""

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
        for d in filter(str.isdigit, os.listdir("/proc")):
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
        """Sum the tree's resident memory (bytes) at ``now``, recording the peak and whether the limit is passed."""
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
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _peek_peak(fd: int) -> int | None:
    """The peak RSS (KiB) a program reported on its pipe (common's sitecustomize), without closing ``fd``."""
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, 64)
    except OSError:
        return None
    return int(data[:-1]) if data.endswith(b"\n") and data[:-1].isdigit() and len(data) < 14 else None


class Follow:
    """Start ``argv`` in its own session and follow it to its end: one :class:`_Raw` per program in ``raws``.

    With ``status_r`` the process is the bubblewrap driver running ``n`` programs; ``streams`` maps further read fds to
    (program index, "stdout"/"stderr"), its own pipes being the last program's. Over ``timeout_s`` wall seconds,
    ``output_bytes`` per stream or ``memory_mb`` the process group is killed. ``peaks``: per program, the read end of its
    peak-memory pipe. Raises OSError only when ``argv[0]`` cannot be started.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        timeout_s: float,
        output_bytes: int,
        pass_fds: Sequence[int] = (),
        peaks: Sequence[int] = (),
        streams: dict[int, tuple[int, str]] | None = None,
        status_r: int | None = None,
        n: int = 1,
        status_cap: int = 64 * 1024,
        memory_mb: int | None = None,
        uid: int | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        grace_s: float = 0.5,
    ):
        self.t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=tuple(pass_fds),
            )
        finally:
            for fd in pass_fds:  # the child holds the write ends now
                os.close(fd)
        self.n, self.timeout_s, self.output_bytes, self.grace_s = n, timeout_s, output_bytes, grace_s
        self.status_cap, self.peaks, self.driven = status_cap, list(peaks), status_r is not None
        self.raws: list[_Raw] = [] if self.driven else [_Raw()]
        self.current: int | None = None if self.driven else 0
        self.bufs: dict[tuple[int, str], bytearray] = {}
        self.status_buf = bytearray()
        self.files: dict[str, str] = {}
        self.nostart: str | None = None
        self.exited = False
        self.started_at, self.deadline = self.t0, self.t0 + timeout_s
        self.watch = TreeWatch(self.proc.pid, memory_mb, uid=uid) if memory_mb is not None else None
        self.sel = selectors.DefaultSelector()
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
            self.sel.register(self.pidfd, selectors.EVENT_READ, ("exit", None))
        except (AttributeError, OSError):  # pragma: no cover - kernels < 5.3
            self.pidfd = None
        sources: list[tuple[Any, tuple[str, Any]]] = [
            (self.proc.stdout, ("stream", (n - 1, "stdout"))),
            (self.proc.stderr, ("stream", (n - 1, "stderr"))),
            *((fd, ("stream", key)) for fd, key in (streams or {}).items()),
        ]
        if status_r is not None:
            sources.append((status_r, ("status", None)))
        for f, data in sources:
            self.sel.register(f, selectors.EVENT_READ, data)
        self.open_fds = len(sources)

    def run(self) -> "Follow":
        """Follow the process until it and its pipes are done (or it is killed), reap it, fill ``raws``."""
        try:
            while not self._round():
                pass
        finally:
            self.sel.close()
            with contextlib.suppress(ChildProcessError):  # already reaped by a poll
                self.proc.returncode = os.waitstatus_to_exitcode(os.waitpid(self.proc.pid, 0)[1])
            if not self.driven:
                self.raws[0].returncode = self.proc.returncode
                self.raws[0].wall_s = time.perf_counter() - self.t0
            # whatever of the process group survives is killed, its pipes and pidfd closed
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            for f in (self.proc.stdout, self.proc.stderr):
                if f is not None:
                    with contextlib.suppress(OSError):
                        f.close()
            if self.pidfd is not None:
                os.close(self.pidfd)
        for i, raw in enumerate(self.raws):
            raw.stdout = bytes(self.bufs.get((i, "stdout"), b""))
            raw.stderr = bytes(self.bufs.get((i, "stderr"), b""))
            raw.peak_kb = _peek_peak(self.peaks[i]) if i < len(self.peaks) else None
            if self.watch is not None and raw.tree_peak_kb is None:
                raw.tree_peak_kb = self.watch.peak_bytes // 1024
            if raw.returncode is None:  # killed by the host, or the driver died under it
                raw.returncode = -signal.SIGKILL
        return self

    def kill(self) -> None:
        """SIGKILL the process group (and every process of the watched tree)."""
        for target in (lambda: os.killpg(self.proc.pid, signal.SIGKILL), self.proc.kill):
            with contextlib.suppress(OSError):
                target()
        if self.watch is not None:
            self.watch.kill()

    def _stop_current(self, now: float, flag: str) -> None:
        if self.current is not None:
            setattr(self.raws[self.current], flag, True)
            self.raws[self.current].wall_s = now - self.started_at
        self.kill()

    def _round(self) -> bool:
        """One round of the loop: limits, then the selector's events; True when following is over."""
        now = time.perf_counter()
        if now >= self.deadline:
            if not self.exited:
                self._stop_current(now, "timed_out")
            else:
                self.kill()
            return True
        if self.exited and self.open_fds == 0:
            return True
        if self.watch is not None and self.watch.due(now) <= 0:
            self.watch.sample(now)
            if self.watch.exceeded:
                self._stop_current(now, "memory_exceeded")
                return True
        for key, _ in self._select(now):
            kind, what = key.data
            if kind == "exit":
                self.sel.unregister(key.fileobj)
                self._exit_seen()
                continue
            data = os.read(key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno(), 65536)
            if not data:
                self.sel.unregister(key.fileobj)
                self.open_fds -= 1
            elif not (self._status(data) if kind == "status" else self._output(what, data)):
                self.kill()
                return True
        return False

    def _select(self, now: float) -> list:
        """The selector's events until the deadline or the next memory sample (20 ms polls without a pidfd)."""
        until = self.deadline if self.watch is None else min(self.deadline, now + max(0.0, self.watch.due(now)))
        poll = self.pidfd is None and not self.exited
        events = self.sel.select(min(until - now, 0.02) if poll else until - now)
        if poll and self.proc.poll() is not None:
            self._exit_seen()
        return events

    def _exit_seen(self) -> None:
        # descendants outside the namespace (unsafe backend) may keep the pipes open: a short grace, then kill
        self.exited = True
        self.deadline = min(self.deadline, time.perf_counter() + self.grace_s)

    def _output(self, what: tuple[int, str], data: bytes) -> bool:
        """Keep ``data`` of a program's stream; False when it passes ``output_bytes`` (kept up to it)."""
        buf = self.bufs.setdefault(what, bytearray())
        room = self.output_bytes - len(buf)
        if len(data) <= room:
            buf.extend(data)
            return True
        buf.extend(data[: max(room, 0)])
        if what[0] < len(self.raws):
            self.raws[what[0]].truncated[what[1]] = True
            self.raws[what[0]].output_exceeded = True
        return False

    def _status(self, data: bytes) -> bool:
        """Take the driver's status lines in ``data``; False when they pass ``status_cap`` bytes."""
        if len(self.status_buf) + len(data) > self.status_cap:
            return False
        self.status_buf.extend(data)
        while b"\n" in self.status_buf:
            line, _, rest = bytes(self.status_buf).partition(b"\n")
            self.status_buf[:] = rest
            self._on_status(line.decode("utf-8", "replace"))
        return True

    def _on_status(self, line: str) -> None:
        word, _, rest = line.partition(" ")
        if word == "start":
            i = int(rest)
            if i != len(self.raws) or i >= self.n:
                return
            self.raws.append(_Raw())
            self.current, self.started_at = i, time.perf_counter()
            self.deadline = self.started_at + self.timeout_s
            if self.watch is not None:  # each program's own peak (the driver killed the last one's processes)
                self.watch.peak_bytes = 0
        elif word == "done":
            i_s, rc_s, wall_s = rest.split()
            i = int(i_s)
            if 0 <= i < len(self.raws):
                self.raws[i].returncode, self.raws[i].wall_s = int(rc_s), float(wall_s)
                if self.watch is not None:
                    self.raws[i].tree_peak_kb = self.watch.peak_bytes // 1024
                self.current = None
                self.deadline = time.perf_counter() + self.timeout_s  # the next program's start is near
        elif word == "nostart":
            self.nostart = rest.partition(" ")[2] or rest
        elif word == "files":
            with contextlib.suppress(ValueError):
                got = json.loads(rest)
                if isinstance(got, dict):
                    self.files.update({str(k): str(v) for k, v in got.items()})
