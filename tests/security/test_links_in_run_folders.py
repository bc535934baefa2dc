"""No link is followed anywhere in a run folder, on read or write, at any depth: a received run folder whose
``figures/``, ``export/``, ``viewer/`` or ``rubrics/`` holds a link is refused with one line by ``report``,
``resume``, ``view`` and ``export``; a link planted after that check (between the check and the write) is not
followed either; ``view`` copies only the PNG figures it finds as plain files.  Each case snapshots the tree
outside the run folder: nothing there changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import InputError, Response, Rubric, RunStore
from sgieval.tests.security.run_folders import CHEM, copy_run, one_error_line, snapshot, viewer_data

runner = CliRunner()
FIX = "Fix: replace each link by the file it points to (or remove it), then retry"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def done_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    res = runner.invoke(app, ["ask", CHEM, "--k", "3", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    assert (run / "figures" / "ranking.png").is_file()
    return run


@pytest.fixture
def run(done_run, tmp_path):
    return copy_run(done_run, tmp_path / "runs")


def refused(run: Path, links: str) -> str:
    return (
        f"error: {run}: the run folder holds symbolic link(s) {links}: writing there could change files outside "
        f"the run. {FIX}"
    )


def test_a_linked_figure_is_refused_by_report_resume_and_view(tmp_path, run):
    # the finding: figures/ranking.png linked outside the run was overwritten with PNG bytes
    victim = tmp_path / "victim.txt"
    victim.write_text("my notes\n")
    (run / "figures" / "ranking.png").unlink()
    (run / "figures" / "ranking.png").symlink_to(victim)
    (run / "report.json").unlink()  # `view` without report.json re-renders the report first
    before = snapshot(tmp_path, skip=run)
    for cmd in (["report", str(run)], ["resume", str(run), "--yes"], ["view", str(run)]):
        assert one_error_line(runner.invoke(app, cmd)) == refused(run, "figures/ranking.png"), cmd
    assert victim.read_text() == "my notes\n"
    assert snapshot(tmp_path, skip=run) == before


def test_a_linked_figures_folder_is_refused_too(tmp_path, run):
    # variant: the folder itself is the link (every chart would land outside)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ranking.png").write_bytes(b"theirs")
    for p in (run / "figures").iterdir():
        p.unlink()
    (run / "figures").rmdir()
    (run / "figures").symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(tmp_path, skip=run)
    for cmd in (["report", str(run)], ["view", str(run)], ["export", str(run), "-f", "csv"]):
        assert one_error_line(runner.invoke(app, cmd)) == refused(run, "figures"), cmd
    assert (elsewhere / "ranking.png").read_bytes() == b"theirs"
    assert snapshot(tmp_path, skip=run) == before


@pytest.mark.parametrize("where", ["export", "export/items.csv"])
def test_a_linked_export_folder_or_file_is_refused(tmp_path, run, where):
    # the finding: an export/ link, or export/items.csv, made `export` overwrite the target
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "items.csv").write_text("keep me\n")
    if where == "export":
        (run / "export").symlink_to(outside, target_is_directory=True)
    else:
        (run / "export").mkdir()
        (run / "export" / "items.csv").symlink_to(outside / "items.csv")
    before = snapshot(tmp_path, skip=run)
    for fmt in ("csv", "jsonl", "parquet"):
        assert one_error_line(runner.invoke(app, ["export", str(run), "-f", fmt])) == refused(run, where)
    assert (outside / "items.csv").read_text() == "keep me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["items.csv"]
    assert snapshot(tmp_path, skip=run) == before


def test_view_never_copies_a_linked_figure_into_the_viewer(tmp_path, run):
    # the finding: `view` copied a linked figure's target (any readable file) into the folder meant for sharing
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    (run / "figures" / "extra.png").symlink_to(secret)
    before = snapshot(tmp_path, skip=run)
    assert one_error_line(runner.invoke(app, ["view", str(run)])) == refused(run, "figures/extra.png")
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in run.rglob("*") if p.is_file() and not p.is_symlink())
    assert snapshot(tmp_path, skip=run) == before


def test_view_never_copies_a_hard_linked_figure(tmp_path, run):
    # variant: a hard link names a file that may lie outside the run (a PNG of the user's, say)
    photo = tmp_path / "private.png"
    photo.write_bytes((run / "figures" / "ranking.png").read_bytes()[:8] + b"my private picture")
    os.link(photo, run / "figures" / "photo.png")
    before = snapshot(tmp_path, skip=run)
    assert one_error_line(runner.invoke(app, ["view", str(run)])) == (
        f"error: {run}: figures/photo.png has other hard links: sgieval copies only files written in the run "
        "folder. Fix: replace it by a copy of the file (cp, not ln), or remove it"
    )
    assert not any(b"my private picture" in p.read_bytes() for p in (run / "viewer").rglob("*") if p.is_file())
    assert snapshot(tmp_path, skip=run) == before


def test_view_copies_only_the_png_figures_it_finds_as_plain_files(tmp_path, run):
    # variant: a plain file that is no PNG (not a chart sgieval drew) is not copied; the PNGs are
    (run / "figures" / "notes.png").write_text("not an image: private notes\n")
    before = snapshot(tmp_path, skip=run)
    res = runner.invoke(app, ["view", str(run)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (run / "viewer" / "figures").iterdir()) == ["ranking.png"]
    assert (run / "viewer" / "figures" / "ranking.png").read_bytes() == (run / "figures" / "ranking.png").read_bytes()
    assert viewer_data(run)["figures"] == ["ranking.png"]
    assert snapshot(tmp_path, skip=run) == before


def test_links_deeper_in_viewer_and_rubrics_are_refused(tmp_path, run):
    # variant: at any depth (viewer/figures/, rubrics/)
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"mine")
    res = runner.invoke(app, ["view", str(run)])
    assert res.exit_code == 0, res.output
    (run / "viewer" / "figures" / "ranking.png").unlink()
    (run / "viewer" / "figures" / "ranking.png").symlink_to(victim)
    (run / "rubrics").mkdir(exist_ok=True)
    (run / "rubrics" / "rigor.yaml").symlink_to(victim)
    before = snapshot(tmp_path, skip=run)
    for cmd in (["view", str(run)], ["resume", str(run), "--yes"], ["report", str(run)]):
        assert one_error_line(runner.invoke(app, cmd)) == refused(run, "rubrics/rigor.yaml, viewer/figures/ranking.png")
    assert victim.read_bytes() == b"mine"
    assert snapshot(tmp_path, skip=run) == before


def test_a_fifo_in_the_figures_folder_is_one_line_not_a_hang(tmp_path, run):
    # variant: not a link but no regular file either (reading it would block for ever)
    os.mkfifo(run / "figures" / "wait.png")
    before = snapshot(tmp_path, skip=run)
    assert one_error_line(runner.invoke(app, ["view", str(run)])) == (
        f"error: {run}: figures/wait.png is not a regular file. Fix: replace it by the file sgieval wrote, or remove it"
    )
    assert snapshot(tmp_path, skip=run) == before


# ---------------------------------------------------------------- a link planted after the check
def test_links_planted_after_the_folder_was_checked_are_not_followed(tmp_path, run):
    from sgieval.reports.charts import ranking_chart
    from sgieval.reports.export import export_run
    from sgieval.reports.viewer import write_viewer

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ranking.png").write_bytes(b"theirs")
    (outside / "index.html").write_text("theirs")
    (outside / "responses.jsonl").write_text("")
    store = RunStore(run)  # the check passes: no link yet
    items, responses, scores = store.read("items"), store.read("responses"), store.read("scores")
    before = snapshot(tmp_path, skip=run)

    # figures/ becomes a link after the check: the chart is not written through it
    for p in (run / "figures").iterdir():
        p.unlink()
    (run / "figures").rmdir()
    (run / "figures").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InputError, match=r"symbolic link\(s\) figures:"):
        ranking_chart(run / "figures" / "ranking.png", ["a"], [1.0], [0.5], [1.5], metric="m", scale="0-1", root=run)

    # viewer/ becomes a link: the viewer is not written (nor emptied) through it
    (run / "viewer").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InputError, match=r"symbolic link\(s\) viewer:"):
        write_viewer(run, items, responses, scores)

    # a JSONL file becomes a link before its first append: the record is not appended through it
    (run / "responses.jsonl").unlink()
    (run / "responses.jsonl").symlink_to(outside / "responses.jsonl")
    with pytest.raises(InputError, match=r"symbolic link\(s\) responses.jsonl:"):
        store.append("responses", [Response(item_id="x", model="m", text="t")])

    # the run's rubric copy and the export folder
    (run / "rubrics").symlink_to(outside, target_is_directory=True)
    rubric = Rubric(name="rigor", tasks=["generic"], description="d", criteria=[{"name": "a", "description": "b"}])
    with pytest.raises(InputError, match=r"symbolic link\(s\) rubrics:"):
        rubric.to_yaml(run / "rubrics" / "rigor.yaml", root=run)
    store.close()
    assert (outside / "ranking.png").read_bytes() == b"theirs"
    assert (outside / "index.html").read_text() == "theirs"
    assert (outside / "responses.jsonl").read_text() == ""
    assert sorted(p.name for p in outside.iterdir()) == ["index.html", "ranking.png", "responses.jsonl"]
    assert snapshot(tmp_path, skip=run) == before
    with pytest.raises(InputError, match=r"symbolic link\(s\) responses.jsonl, figures, rubrics, viewer:"):
        export_run(run, "csv")


def test_the_run_folder_itself_may_be_a_link(tmp_path, run):
    # the user's own path to the run (a renamed or linked run folder) is theirs: only what is inside is checked
    link = tmp_path / "my-run"
    link.symlink_to(run, target_is_directory=True)
    for cmd in (["report", str(link)], ["view", str(link)], ["export", str(link), "-f", "jsonl"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, res.output
    assert (run / "viewer" / "index.html").is_file() and (run / "export" / "scores.jsonl").is_file()
