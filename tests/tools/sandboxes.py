"""Helpers of the sandbox security tests (escape, limits, environment, isolation): the skip mark for hosts where
bubblewrap cannot start, and a run that checks nothing of the program survives it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from sgieval.tools.base import ExecResult
from sgieval.tools.sandbox import BubblewrapSandbox, bwrap_status, processes_of_uid

needs_bwrap = pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap cannot start here")


def children_of_me() -> list[int]:
    """PIDs of the live children of the test process."""
    me = os.getpid()
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                kids.append(int(d))
    return kids


def checked_run(sbx, code: str, **kw) -> ExecResult:
    """``sbx.run`` of ``code`` (dedented), then: no live process of the sandbox's uids (bubblewrap; tests give each
    sandbox uids of its own) and no live child of the test process (bwrap, or the unsafe backend's program)."""
    res = sbx.run(textwrap.dedent(code), **kw)
    if isinstance(sbx, BubblewrapSandbox):
        assert [p for u in sbx.uids for p in processes_of_uid(u)] == [], "a sandboxed process survived the run"
    assert children_of_me() == [], "a sandbox process survived the run"
    assert res.backend == sbx.name
    return res
