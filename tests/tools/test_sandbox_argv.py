"""The bubblewrap sandbox's command line asserted whole (the sandbox's command line decides what
model-written code can reach).  Namespaces, mounts, limits (prlimit values computed by hand from the limits),
the uid drop and the environment: every element of ``argv`` is checked, in order."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path, PurePosixPath

import pytest

from sgieval.tests.tools.sandboxes import needs_bwrap
from sgieval.tools.sandbox import bwrap as bw
from sgieval.tools.sandbox.common import _BOOT_MOUNT, SANDBOX_WORKDIR, _boot_dir, _sandbox_env

pytestmark = needs_bwrap

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
    assert got == sorted(
        {p for p in mine if p != "/" and not p.startswith("/usr/")} | {str(tmp_path / "venv"), str(tmp_path / "base")}
    )


def _sandbox(**kw):
    return bw.BubblewrapSandbox(memory_mb=512, max_processes=8, max_file_mb=16, tmp_mb=32, timeout_s=30, **kw)


def test_full_command_line_with_a_uid(tmp_path):
    sbx = _sandbox(cpu_time_s=7)
    ns = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:
        ns = ["--unshare-user", "--disable-userns"] + ns
    static = [
        sbx.bwrap,
        *ns,
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        *_expected_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(32 * MIB),
        "--tmpfs",
        "/dev/shm",
        "--perms",
        "1777",
        "--size",
        str(32 * MIB),
        "--tmpfs",
        "/tmp",
        *bw._bind_args(bw._bwrap_python_paths(sbx.python), made={"/tmp", "/dev", "/dev/shm", "/proc"}),
        "--ro-bind",
        _boot_dir(),
        _BOOT_MOUNT,
        "--perms",
        "1777",
        "--size",
        str(256 * MIB),
        "--tmpfs",
        SANDBOX_WORKDIR,
        "--clearenv",
    ]
    env = [x for k, v in _sandbox_env({"PYTHONPATH": _BOOT_MOUNT}).items() for x in ("--setenv", k, v)]
    spec = {"programs": ["print(1)"]}
    got = sbx.argv(tmp_path, spec, 12.5, 3_900_007)
    assert got == static + env + [
        "--ro-bind",
        str(tmp_path),
        "/.sgieval-in",
        "--chdir",
        SANDBOX_WORKDIR,
        "setpriv",
        "--reuid=3900007",
        "--regid=3900007",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
        # 512 MiB, CPU 7 s (soft) / 8 s (hard), 8 programs + the driver, 16 MiB files, no core dumps
        "prlimit",
        f"--as={512 * MIB}",
        "--cpu=7:8",
        "--nproc=9",
        f"--fsize={16 * MIB}",
        "--core=0",
        "--",
        sbx.python,
        "-X",
        "utf8",
        f"{_BOOT_MOUNT}/driver.py",
        json.dumps(spec),
    ]


def test_without_a_uid_the_callers_processes_are_added_to_the_process_limit(tmp_path, monkeypatch):
    sbx = _sandbox(work_mb=300)
    monkeypatch.setattr(bw, "_count_processes", lambda uid: 5 if uid == os.getuid() else 0)
    got = sbx.argv(Path(tmp_path), {}, 12.5, None)
    assert "setpriv" not in got
    # CPU without cpu_time_s: ceil(12.5) + 1 = 14 s soft (the wall timeout fires first), 15 s hard;
    # processes 8 + 1 + 5 already running
    tail = got[got.index("prlimit") :]
    assert tail == [
        "prlimit",
        f"--as={512 * MIB}",
        "--cpu=14:15",
        "--nproc=14",
        f"--fsize={16 * MIB}",
        "--core=0",
        "--",
        sbx.python,
        "-X",
        "utf8",
        f"{_BOOT_MOUNT}/driver.py",
        "{}",
    ]
    assert got[got.index(SANDBOX_WORKDIR) - 3 : got.index(SANDBOX_WORKDIR) + 1] == [
        "--size",
        str(300 * MIB),
        "--tmpfs",
        SANDBOX_WORKDIR,
    ]


def test_bind_args_order_by_length_and_the_root_and_a_name_ending_like_a_strip_character(tmp_path):
    made = {str(p) for p in PurePosixPath(tmp_path).parents} | {str(tmp_path)}
    for d in ("b", "aa", "aX", "a/b"):
        (tmp_path / d).mkdir(parents=True)
    b, aa = str(tmp_path / "b"), str(tmp_path / "aa")
    assert bw._bind_args([aa, b], made=made) == ["--ro-bind", b, b, "--ro-bind", aa, aa]  # shorter first
    # …/aX does not contain …/a/b
    ax, ab = str(tmp_path / "aX"), str(tmp_path / "a" / "b")
    assert bw._bind_args([ax, ab], made=made) == [
        "--ro-bind",
        ax,
        ax,
        "--perms",
        "0755",
        "--dir",
        str(tmp_path / "a"),
        "--ro-bind",
        ab,
        ab,
    ]
    assert bw._bind_args(["/", "/usr", "/etc"]) == ["--ro-bind", "/", "/"]  # everything is inside /


@pytest.mark.parametrize("top", ["/bin", "/sbin", "/lib", "/lib64"])
def test_no_folder_is_made_over_a_top_level_link(top):
    inside = next((os.path.join(top, n) for n in sorted(os.listdir(top))), None) if os.path.isdir(top) else None
    if inside is None:
        pytest.skip(f"{top} is not on this host")
    assert bw._bind_args([inside]) == ["--ro-bind", inside, inside]


def test_system_binds_on_a_host_with_real_top_level_folders(monkeypatch):
    present = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}
    monkeypatch.setattr(bw.Path, "is_symlink", lambda self: False)
    monkeypatch.setattr(bw.Path, "is_dir", lambda self: str(self) in present)
    got = bw._system_binds()
    assert got[:21] == [
        "--ro-bind",
        "/usr",
        "/usr",
        "--ro-bind",
        "/bin",
        "/bin",
        "--ro-bind",
        "/sbin",
        "/sbin",
        "--ro-bind",
        "/lib",
        "/lib",
        "--ro-bind",
        "/lib64",
        "/lib64",
        "--ro-bind",
        "/lib32",
        "/lib32",
        "--ro-bind",
        "/libx32",
        "/libx32",
    ]
    assert got[21:25] == ["--perms", "0755", "--dir", "/etc"]


def test_python_paths_leave_out_the_root_and_what_lies_under_usr(tmp_path):
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to("/usr/lib/sgieval-test/bin/python")  # need not exist: only resolved
    mine = {
        p
        for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
        if p != "/" and not p.startswith("/usr/")
    }
    assert bw._bwrap_python_paths(str(venv / "python")) == sorted(mine | {str(tmp_path / "venv")})
    # /bin/python: its folder's parent is / (left out); resolved through the /bin link it is /usr
    assert bw._bwrap_python_paths("/bin/python-sgieval-test") == sorted(
        mine | ({"/usr"} if os.path.islink("/bin") else set())
    )


def test_static_args_when_not_root():
    sbx = _sandbox()
    sbx.is_root = False
    got = sbx._static_args()
    assert got[:9] == [
        sbx.bwrap,
        "--unshare-user",
        "--disable-userns",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
    ]


@pytest.mark.parametrize("where", ["tmp", "/dev/shm", "/proc/self/fd"])
def test_an_interpreter_under_the_fresh_mounts_makes_no_folder_over_them(tmp_path, where):
    if where == "tmp":
        base = tmp_path
    elif where == "/dev/shm":
        if not os.access("/dev/shm", os.W_OK):
            pytest.skip("/dev/shm is not writable here")
        import tempfile

        base = Path(tempfile.mkdtemp(dir="/dev/shm"))
    else:
        base = None
    if base is not None:
        (base / "venv" / "bin").mkdir(parents=True)
        python = str(base / "venv" / "bin" / "python")
    else:
        python = "/proc/self/fd/python"
    try:
        sbx = _sandbox(python=python)
        got = sbx._static_args()
        tmpfs = got.index("/tmp")  # "--tmpfs", "/tmp": the folders after it are the interpreter's
        boot = got.index(_BOOT_MOUNT)
        binds = got[tmpfs + 1 : boot - 2]
        assert binds == bw._bind_args(bw._bwrap_python_paths(python), made={"/tmp", "/dev", "/dev/shm", "/proc"})
        dirs = [binds[k + 1] for k, x in enumerate(binds) if x == "--dir"]
        assert not {"/tmp", "/dev", "/dev/shm", "/proc"} & set(dirs)
    finally:
        if where == "/dev/shm":
            import shutil

            shutil.rmtree(base, ignore_errors=True)
