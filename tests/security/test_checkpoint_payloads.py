"""A received run folder's checkpoint (``state.sqlite``) is data: a planted constructor value never runs.

LangGraph's checkpoint serializer rebuilds any stored ``(module, name, argument)`` unless it has an allowlist
(GHSA-g48c-2wqr-h844). Each case plants such a value in a real run's checkpoint and opens the folder with every
command that reads it (``report``, ``view`` without report.json, ``resume``, ``sgieval.load_run``): no command runs
it, each stops with exit 2 and one line naming the file, and nothing outside the run folder changes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import ormsgpack
import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import InputError
from sgieval.graphs.checkpoints import ALLOWED_TYPES

from sgieval.tests.security.run_folders import CHEM, snapshot, user_env

runner = CliRunner()


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    user_env(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished offline run over 3 chemistry questions (stored answers), reused by every case (copied)."""
    out = tmp_path_factory.mktemp("made") / "runs"
    res = runner.invoke(app, ["ask", CHEM, "--k", "3", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    return run


def copy_run(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest)
    return dest


def keep_ext(code: int, data: bytes) -> ormsgpack.Ext:
    """Decode nothing: keep every extension value as it is (no constructor is looked up)."""
    return ormsgpack.Ext(code, data)


def stored_types(db: Path) -> set[tuple[str, str]]:
    """Every (module, name) a constructor extension in the checkpoints and writes of ``db`` refers to."""
    found: set[tuple[str, str]] = set()

    def hook(code: int, data: bytes):
        inner = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        if code in (0, 1, 2, 3, 4, 5):
            found.add((inner[0], inner[1]))
        return None

    with sqlite3.connect(db) as conn:
        blobs = [r for r in conn.execute("SELECT type, checkpoint FROM checkpoints")]
        blobs += [r for r in conn.execute("SELECT type, value FROM writes")]
    for kind, raw in blobs:
        assert kind in ("msgpack", "null", None), kind
        if kind == "msgpack":
            ormsgpack.unpackb(raw, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    return found


def plant(db: Path, payload: ormsgpack.Ext) -> None:
    """Put ``payload`` into the ``report`` channel of the latest checkpoint of ``db``."""
    with sqlite3.connect(db) as conn:
        rowid, raw = conn.execute(
            "SELECT rowid, checkpoint FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        cp = ormsgpack.unpackb(raw, ext_hook=keep_ext, option=ormsgpack.OPT_NON_STR_KEYS)
        cp["channel_values"]["report"] = payload
        conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (ormsgpack.packb(cp), rowid))


def ext(code: int, *parts) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(list(parts)))


def test_a_real_run_stores_only_allowlisted_types(finished, tmp_path):
    run = copy_run(finished, tmp_path / "run")
    assert stored_types(run / "state.sqlite") <= ALLOWED_TYPES
    # and the strict reader opens the run's own checkpoint: report and resume work as before
    for cmd in (["report", str(run)], ["resume", str(run), "--yes"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, res.output
    assert sgieval.load_run(run).selection["item_ids"]


@pytest.mark.parametrize(
    "payload, shown",
    [
        (lambda m: ext(0, "os", "system", f"touch {m}"), "a value of type os.system"),  # the reported payload
        (lambda m: ext(1, "subprocess", "call", ["touch", str(m)]), "a value of type subprocess.call"),
        (lambda m: ext(2, "subprocess", "run", {"args": ["touch", str(m)]}), "a value of type subprocess.run"),
        (lambda m: ext(3, "os", "system", f"touch {m}", "__call__"), "a call of os.system.__call__"),
    ],
    ids=["single-arg", "positional", "keywords", "method"],
)
def test_a_planted_constructor_never_runs(finished, tmp_path, payload, shown):
    run = copy_run(finished, tmp_path / "run")
    marker = tmp_path / "marker"
    plant(run / "state.sqlite", payload(marker))
    (run / "report.json").unlink()  # `view` then re-renders the report from the checkpoint
    before = snapshot(tmp_path, skip=run)
    expected = (
        f"error: {run / 'state.sqlite'}: state.sqlite holds {shown}, which sgieval never writes; the folder may "
        "have been tampered with."
    )
    for cmd in (["report", str(run)], ["view", str(run)], ["resume", str(run), "--yes"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2, (cmd, res.output)
        assert res.output.strip().startswith(expected), (cmd, res.output)
        assert len(res.output.strip().splitlines()) == 1, res.output
        assert not marker.exists()
    with pytest.raises(InputError, match=f"holds {shown}"):
        sgieval.load_run(run)
    assert not marker.exists()
    assert snapshot(tmp_path, skip=run) == before


def test_a_pickled_checkpoint_is_refused(finished, tmp_path):
    import pickle

    run = copy_run(finished, tmp_path / "run")
    with sqlite3.connect(run / "state.sqlite") as conn:
        conn.execute(
            "UPDATE checkpoints SET type = 'pickle', checkpoint = ? WHERE checkpoint_id = "
            "(SELECT MAX(checkpoint_id) FROM checkpoints)",
            (pickle.dumps({"channel_values": {}}),),
        )
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 2, res.output
    assert "state.sqlite holds a value stored as 'pickle'" in res.output
