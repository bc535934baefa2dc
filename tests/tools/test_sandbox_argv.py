"""The bubblewrap sandbox's command line asserted whole (issue 15 item 3: the sandbox's command line decides what
model-written code can reach).  Namespaces, mounts, limits (prlimit values computed by hand from the limits),
the uid drop and the environment: every element of ``argv`` is checked, in order."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path, PurePosixPath

import pytest

from sgieval.tools.sandbox import bwrap as bw
from sgieval.tools.sandbox.common import _BOOT_MOUNT, SANDBOX_WORKDIR, _boot_dir, _sandbox_env

pytestmark = pytest.mark.skipif(not bw.bwrap_status()[0], reason="bubblewrap cannot start here")

MIB = 1024 * 1024


def _expected_system_binds() -> list[str]:
    out = ["--ro-bind", "/usr", "/usr"]
    for d in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(d):
            out += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            out += ["--ro-bind", d, d]
    out += ["--perms", "0755", "--dir", "/etc"]
    for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives"):
        if os.path.exists(f):
            out += ["--ro-bind", f, f]
    return out


def test_system_binds():
    got = bw._system_binds()
    assert got == _expected_system_binds()
    assert got[:3] == ["--ro-bind", "/usr", "/usr"] and got.count("/etc") == 1


def test_bind_args_dedupe_nested_and_missing_paths_and_make_parents_traversable(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "cc").mkdir()
    a, ab, cc = str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(tmp_path / "cc")
    parents = [str(p) for p in reversed(PurePosixPath(a).parents) if str(p) != "/"]
    dirs = [x for p in parents for x in ("--perms", "0755", "--dir", p)]
    got = bw._bind_args([ab, a, "", str(tmp_path / "missing"), cc, ab + "/../b"])
    assert got == dirs + ["--ro-bind", a, a, "--ro-bind", cc, cc]
    # folders already made are not made again; the top-level links (/bin, /lib...) are never made
    assert bw._bind_args([a], made=set(parents)) == ["--ro-bind", a, a]
    assert bw._bind_args(["/bin/sh"]) == ["--ro-bind", "/bin/sh", "/bin/sh"]
    # a folder sharing a prefix with another (…/a and …/ab) is not nested in it
    (tmp_path / "ab").mkdir()
    got = bw._bind_args([a, str(tmp_path / "ab")], made=set(parents))
    assert got == ["--ro-bind", a, a, "--ro-bind", str(tmp_path / "ab"), str(tmp_path / "ab")]


def test_python_paths_are_both_installations_of_the_interpreter(tmp_path):
    base = tmp_path / "base" / "bin"
    venv = tmp_path / "venv" / "bin"
    base.mkdir(parents=True)
    venv.mkdir(parents=True)
    (base / "python3").write_text("")
    (venv / "python").symlink_to(base / "python3")
    got = bw._bwrap_python_paths(str(venv / "python"))
    mine = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    assert got == sorted({p for p in mine if p != "/" and not p.startswith("/usr/")}
                         | {str(tmp_path / "venv"), str(tmp_path / "base")})


def _sandbox(**kw):
    return bw.BubblewrapSandbox(memory_mb=512, max_processes=8, max_file_mb=16, tmp_mb=32, timeout_s=30, **kw)


def test_full_command_line_with_a_uid(tmp_path):
    sbx = _sandbox(cpu_time_s=7)
    ns = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:
        ns = ["--unshare-user", "--disable-userns"] + ns
    static = [sbx.bwrap, *ns, "--die-with-parent", "--new-session", "--hostname", "sandbox",
              *_expected_system_binds(), "--proc", "/proc", "--dev", "/dev",
              "--perms", "1777", "--size", str(32 * MIB), "--tmpfs", "/dev/shm",
              "--perms", "1777", "--size", str(32 * MIB), "--tmpfs", "/tmp",
              *bw._bind_args(bw._bwrap_python_paths(sbx.python), made={"/tmp", "/dev", "/dev/shm", "/proc"}),
              "--ro-bind", _boot_dir(), _BOOT_MOUNT,
              "--perms", "1777", "--size", str(256 * MIB), "--tmpfs", SANDBOX_WORKDIR,
              "--clearenv"]
    env = [x for k, v in _sandbox_env({"PYTHONPATH": _BOOT_MOUNT}).items() for x in ("--setenv", k, v)]
    spec = {"programs": ["print(1)"]}
    got = sbx.argv(tmp_path, spec, 12.5, 3_900_007)
    assert got == static + env + [
        "--ro-bind", str(tmp_path), "/.sgieval-in", "--chdir", SANDBOX_WORKDIR,
        "setpriv", "--reuid=3900007", "--regid=3900007", "--clear-groups", "--no-new-privs", "--inh-caps=-all",
        "--bounding-set=-all", "--",
        # 512 MiB, CPU 7 s (soft) / 8 s (hard), 8 programs + the driver, 16 MiB files, no core dumps
        "prlimit", f"--as={512 * MIB}", "--cpu=7:8", "--nproc=9", f"--fsize={16 * MIB}", "--core=0", "--",
        sbx.python, "-X", "utf8", f"{_BOOT_MOUNT}/driver.py", json.dumps(spec)]


def test_without_a_uid_the_callers_processes_are_added_to_the_process_limit(tmp_path, monkeypatch):
    sbx = _sandbox(work_mb=300)
    monkeypatch.setattr(bw, "_count_processes", lambda uid: 5 if uid == os.getuid() else 0)
    got = sbx.argv(Path(tmp_path), {}, 12.5, None)
    assert "setpriv" not in got
    # CPU: ceil(12.5) = 13 s soft, 14 s hard; processes 8 + 1 + 5 already running
    tail = got[got.index("prlimit"):]
    assert tail == ["prlimit", f"--as={512 * MIB}", "--cpu=13:14", "--nproc=14", f"--fsize={16 * MIB}", "--core=0",
                    "--", sbx.python, "-X", "utf8", f"{_BOOT_MOUNT}/driver.py", "{}"]
    assert got[got.index(SANDBOX_WORKDIR) - 3:got.index(SANDBOX_WORKDIR) + 1] == [
        "--size", str(300 * MIB), "--tmpfs", SANDBOX_WORKDIR]
