"""A run folder received from someone else is data: `sgieval compare`, `runs`, `view --dest`, `export --dest` and
`sgieval.load_run` read it without creating, changing or leaving anything in it (no ``figures/``, no
``state.sqlite-wal``/``-shm``, no torn last line truncated), and they work on a folder whose files and folders are
all read-only (``chmod -R a-w``).

Each test snapshots the runs folder (every path with its type, mode, size, modification time and SHA-256) before and
after the command and asserts the two are the same.  The runs are real runs of the stored SciAidanBench answers;
``killed`` is the paused run as a process killed mid-run leaves it: its checkpoints only in ``state.sqlite-wal``
(SQLite had not copied them into the database file yet) and a torn last line in ``items.jsonl``.

Read-only folders: tests run as root here, and root ignores file modes, so the read-only variants run the command in
a child process without the capabilities that let root bypass them (``setpriv --bounding-set
-dac_override,-dac_read_search``); as another user they run it directly.  They check first that the folder really
cannot be written by that process, and skip only when it can (root without ``setpriv``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import RunStore
from sgieval.graphs import read_state

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"
MODELS = "replay:o1-mini,replay:phi4"


def _state_in_wal(src: Path, dest: Path, scratch: Path) -> None:
    """``dest`` (a run's ``state.sqlite``) with the checkpoints of ``src`` held only in ``dest``-wal: what a run
    killed before SQLite's checkpoint leaves (the files copied while the writing connection is still open)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    scratch.mkdir()
    work = scratch / "state.sqlite"
    conn = sqlite3.connect(work, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")  # nothing reaches the database file
        SqliteSaver(conn).setup()  # LangGraph's schema, in WAL mode
        conn.execute("ATTACH DATABASE ? AS src", (f"{src.absolute().as_uri()}?immutable=1",))
        conn.execute("INSERT INTO checkpoints SELECT * FROM src.checkpoints")
        conn.execute("INSERT INTO writes SELECT * FROM src.writes")
        conn.execute("DETACH DATABASE src")
        for name in ("state.sqlite", "state.sqlite-wal"):
            shutil.copyfile(scratch / name, dest.with_name(name))
    finally:
        conn.close()
    shutil.rmtree(scratch)


@pytest.fixture(scope="module")
def received(tmp_path_factory) -> Path:
    """A runs folder as a colleague sends it: finished runs ``a`` and ``b``, ``paused`` (at the metric
    confirmation), ``killed`` (see the module doc) and ``old`` (reported before report.json existed).  ``b``
    comes without its chart, and empty folders are gone (an archive keeps none): only ``a`` and ``old`` have a
    ``figures/``."""
    out = tmp_path_factory.mktemp("received")
    for run_id in ("a", "b"):
        sgieval.evaluate(CHEM, models=MODELS, out_dir=out, run_id=run_id)
    sgieval.evaluate(CHEM, models=MODELS, out_dir=out, run_id="paused", yes=False)
    killed = out / "killed"
    shutil.copytree(out / "paused", killed)
    config = json.loads((killed / "config.json").read_text())
    (killed / "config.json").write_text(json.dumps({**config, "run_id": "killed"}))
    with sqlite3.connect(killed / "state.sqlite") as db:  # the thread id is the run id
        db.execute("UPDATE checkpoints SET thread_id = 'killed'")
        db.execute("UPDATE writes SET thread_id = 'killed'")
    db.close()
    _state_in_wal(killed / "state.sqlite", killed / "state.sqlite", tmp_path_factory.mktemp("scratch") / "w")
    with (killed / "items.jsonl").open("ab") as f:
        f.write(b'{"id": "sciaidanbench/chem')  # killed mid-write
    old = out / "old"
    shutil.copytree(out / "a", old)
    config = json.loads((old / "config.json").read_text())
    (old / "config.json").write_text(json.dumps({**config, "run_id": "old"}))
    (old / "report.json").unlink()
    shutil.rmtree(out / "b" / "figures")  # sent without its report's chart
    for run in out.iterdir():
        for d in run.iterdir():
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
    assert not (killed / "state.sqlite-shm").exists() and (killed / "state.sqlite-wal").stat().st_size > 0
    return out


@pytest.fixture
def runs_copy(received, tmp_path) -> Path:
    """A copy of the received runs folder (modification times kept) for one test."""
    return Path(shutil.copytree(received, tmp_path / "runs", symlinks=True))


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path below ``root`` (and ``root``): type and mode, size, modification time (ns), SHA-256 of a file."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
        out[str(p.relative_to(root))] = (stat.filemode(st.st_mode), st.st_size, st.st_mtime_ns, digest)
    return out


def test_the_killed_run_keeps_its_state_in_the_wal_only(received):
    """The fixture's premise: the database file alone holds no checkpoint of ``killed`` (read as immutable,
    ignoring the -wal), so a reader that skips the -wal loses the run's state."""
    db = received / "killed" / "state.sqlite"
    conn = sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            conn.execute("SELECT count(*) FROM checkpoints").fetchall()
    finally:
        conn.close()


def test_load_run_and_read_state_leave_the_folders_as_they_were(runs_copy):
    before = snapshot(runs_copy)
    paused, killed = sgieval.load_run(runs_copy / "paused"), sgieval.load_run(runs_copy / "killed")
    assert len(paused.selection["item_ids"]) == 25 and paused.metric_plan["primary"] == "aidan_accepted_answers"
    # the checkpoint in the -wal is read (the same state as the paused run's), the torn line left out unnoted
    assert killed.selection == paused.selection and killed.metric_plan == paused.metric_plan
    assert [i.id for i in killed.items] == [i.id for i in paused.items]
    store = RunStore(runs_copy / "killed", read_only=True)
    assert len(store.read("items")) == len(paused.items) and store.problems == []
    assert read_state(runs_copy / "killed" / "state.sqlite", "killed") == read_state(
        runs_copy / "paused" / "state.sqlite", "paused"
    )
    a = sgieval.load_run(runs_copy / "a")
    assert len(a.responses) == 50 and len(a.scores) == 308
    with pytest.raises(RuntimeError, match="reads the run folder only"):
        store.append("items", killed.items[:1])
    assert snapshot(runs_copy) == before


def _compare(runs: Path, dest: Path) -> list[str]:
    return ["compare", str(runs / "a"), str(runs / "b"), "--dest", str(dest / "cmp"), "--json"]


def _runs(runs: Path, dest: Path) -> list[str]:
    return ["runs", "--out", str(runs), "--json"]


def _view_killed(runs: Path, dest: Path) -> list[str]:
    return ["view", str(runs / "killed"), "--dest", str(dest / "view")]


def _view_old(runs: Path, dest: Path) -> list[str]:
    return ["view", str(runs / "old"), "--dest", str(dest / "view")]


def _export(runs: Path, dest: Path) -> list[str]:
    return ["export", str(runs / "a"), "--format", "jsonl", "--dest", str(dest / "export")]


COMMANDS = [_compare, _runs, _view_killed, _view_old, _export]


def _check_output(command, output: str, dest: Path) -> None:
    """What each command made outside the runs folder (its output is real, not an error that wrote nothing)."""
    if command is _compare:
        data = json.loads(output)
        assert [r["run_id"] for r in data["runs"]] == ["a", "b"] and len(data["shared_items"]) == 25
        assert (dest / "cmp" / "compare.md").is_file()
    elif command is _runs:
        entries = {e["run_id"]: e for e in json.loads(output)}
        assert sorted(entries) == ["a", "b", "killed", "old", "paused"]
        assert entries["a"]["status"] == "complete" and entries["a"]["responses"] == 50
        for run in ("paused", "killed"):  # the selection read from each checkpoint
            assert entries[run]["status"] == "stopped" and entries[run]["n_items"] == 25, entries[run]
    elif command in (_view_killed, _view_old):
        assert (dest / "view" / "index.html").is_file()
        data = (dest / "view" / "data.js").read_text()
        assert data.startswith("window.SGV_DATA = ")
        rows = json.loads(data[len("window.SGV_DATA = ") : -2])["rows"]  # [item, model (-1: none), status, ...]
        if command is _view_old:
            assert [r[2] for r in rows].count("ok") == 50
        else:  # paused before any response: one row per selected item
            assert len(rows) == 25 and {r[1] for r in rows} == {-1}
    else:
        assert len((dest / "export" / "scores.jsonl").read_text().splitlines()) == 308


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.__name__[1:])
def test_a_read_command_leaves_the_runs_folder_as_it_was(runs_copy, tmp_path, command):
    before = snapshot(runs_copy)
    res = runner.invoke(app, command(runs_copy, tmp_path))
    assert res.exit_code == 0, res.output
    _check_output(command, res.stdout, tmp_path)
    assert snapshot(runs_copy) == before


def test_view_without_dest_writes_only_the_viewer_folder(runs_copy):
    before = snapshot(runs_copy)
    res = runner.invoke(app, ["view", str(runs_copy / "a")])
    assert res.exit_code == 0, res.output
    after = snapshot(runs_copy)
    made = sorted(set(after) - set(before))
    assert made[0] == "a/viewer" and all(m.startswith("a/viewer/") for m in made[1:])
    assert {"a/viewer/data.js", "a/viewer/index.html", "a/viewer/text.js"} <= set(made)
    assert {k: v for k, v in after.items() if k not in made and k != "a"} == {
        k: v for k, v in before.items() if k != "a"
    }
    assert after["a"][:2] == before["a"][:2]  # the folder itself: one new entry (its mtime moves)


# ------------------------------------------------------------------------------------------ read-only folders
SETPRIV = shutil.which("setpriv")


def _restricted() -> list[str]:
    """The prefix that runs a child process to which file modes apply (root loses its override)."""
    if os.geteuid() != 0:
        return []
    if SETPRIV is None:
        pytest.skip("running as root, where chmod does not stop writes, and setpriv (util-linux) is missing")
    return [SETPRIV, "--bounding-set", "-dac_override,-dac_read_search"]


def _sgieval(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_restricted(), sys.executable, "-c", "from sgieval.cli import app; app()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def read_only_runs(runs_copy):
    """``runs_copy`` after ``chmod -R a-w``, checked unwritable by the restricted child; writable again after."""
    paths = [runs_copy, *runs_copy.rglob("*")]
    for p in paths:
        p.chmod(stat.S_IMODE(p.lstat().st_mode) & ~0o222)
    probe = subprocess.run(
        [*_restricted(), sys.executable, "-c", f"open({str(runs_copy / 'a' / 'probe')!r}, 'w')"], capture_output=True
    )
    try:
        if probe.returncode == 0:
            pytest.skip("the folder stays writable after chmod -R a-w here")
        assert b"PermissionError" in probe.stderr
        yield runs_copy
    finally:
        for p in paths:
            p.chmod(stat.S_IMODE(p.lstat().st_mode) | 0o200)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.__name__[1:])
def test_a_read_command_works_on_a_read_only_runs_folder(read_only_runs, tmp_path, command):
    before = snapshot(read_only_runs)
    res = _sgieval(command(read_only_runs, tmp_path))
    assert res.returncode == 0, res.stderr
    _check_output(command, res.stdout, tmp_path)
    assert snapshot(read_only_runs) == before


def test_load_run_works_on_a_read_only_runs_folder(read_only_runs):
    before = snapshot(read_only_runs)
    script = (
        "import json, sys, sgieval; r = sgieval.load_run(sys.argv[1]); "
        "print(json.dumps([len(r.items), len(r.selection.get('item_ids', [])), r.metric_plan.get('primary')]))"
    )
    for run in ("killed", "a"):
        res = subprocess.run(
            [*_restricted(), sys.executable, "-c", script, str(read_only_runs / run)], capture_output=True, text=True
        )
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout) == [25, 25, "aidan_accepted_answers"]
    assert snapshot(read_only_runs) == before


@pytest.mark.slow
def test_what_cannot_be_written_or_read_is_named_with_the_fix(read_only_runs, tmp_path):
    before = snapshot(read_only_runs)
    res = _sgieval(["view", str(read_only_runs / "a")])  # its viewer belongs in the read-only run folder
    assert res.returncode == 2
    assert f"{read_only_runs / 'a' / 'viewer'}: cannot write the viewer (Permission denied)" in res.stderr
    assert "pass `--dest FOLDER`" in res.stderr
    res = _sgieval(["compare", "a", "b", "--out", str(read_only_runs)])  # the comparison goes into --out
    assert res.returncode == 2
    assert f"{read_only_runs / 'compare-a-b'}: cannot write the comparison (Permission denied)" in res.stderr
    scores = read_only_runs / "b" / "scores.jsonl"
    scores.chmod(0)
    try:
        res = _sgieval(["compare", "a", "b", "--out", str(read_only_runs), "--dest", str(tmp_path / "cmp")])
    finally:
        scores.chmod(0o444)
    assert res.returncode == 2
    assert f"{scores}: cannot read the run's scores.jsonl (Permission denied)" in " ".join(res.stderr.split())
    state = read_only_runs / "paused" / "state.sqlite"
    state.chmod(0)
    try:
        res = _sgieval(["runs", "--out", str(read_only_runs), "--json"])
    finally:
        state.chmod(0o444)
    assert res.returncode == 0, res.stderr
    (paused,) = [e for e in json.loads(res.stdout) if e["run_id"] == "paused"]
    assert f"{state}: cannot read the run's graph state (Permission denied)" in paused["problem"]
    assert snapshot(read_only_runs) == before
