"""The reports the README shows are byte-identical for the same records.

The README's replay commands run on the real shared SciAidanBench data; each report.md (and the comparison the
README shows) must equal the golden copy in ``tests/fixtures/golden/``, written by this module's ``--write`` mode;
a change meant to change a report rewrites them, and its commit shows the diff of the golden files.  Only what differs per run
by design is replaced before comparing: the run id, the data folder and the call-cache folder (both in the Run
table), the runs' start times in the comparison, and the wall-clock latency column of Cost and usage.

Write the goldens (only when a report is meant to change): ``python tests/test_report_golden.py --write``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"

# (golden file name, ask arguments); each is a README command (README "Usage").
ASKS = [
    ("chemistry.md", ["Which model is the most creative in chemistry?", "--yes"]),
    ("all_questions.md", ["Which model is the most creative?", "--yes"]),
    ("astrophysics_k5.md", ["creative in astrophysics", "--k", "5", "--models", "replay:o1-mini,replay:phi4", "--yes"]),
]
# variables that would put this shell's settings into the Run table; unset while the reports are made
CLEARED_ENV = ("OPENAI_API_KEY", "E2B_API_KEY", "OPENAI_BASE_URL", "SGIEVAL_NO_CACHE", "SGIEVAL_RUBRIC_DIR")


def _normalise(text: str, out: Path, data_dir: Path, run_ids: list[str]) -> str:
    """The report text with the per-run parts replaced by fixed placeholders."""
    for i, run_id in enumerate(run_ids):
        text = text.replace(run_id, f"<run-{i}>")
    text = text.replace(str(out), "<out>").replace(str(data_dir), "<data>")
    text = re.sub(r"SGIEVAL_CACHE_DIR=[^,]*,", "SGIEVAL_CACHE_DIR=<cache>,", text)
    text = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d\b", "<time>", text)
    # the latency column of Cost and usage is wall-clock time
    cost = re.search(r"^## Cost and usage\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
    if cost:
        rows = re.sub(r"^(\|.*\| )[0-9.]+( \| [^|]* \|)$", r"\1<s>\2", cost.group(0), flags=re.M)
        text = text[: cost.start()] + rows + text[cost.end() :]
    return text


def _render_all(tmp: Path, data_dir: Path) -> dict[str, str]:
    """Run every README command in ``tmp`` and return {golden name: normalised text}."""
    from sgieval.cli import app

    runner = CliRunner()
    out = tmp / "runs"
    run_ids: list[str] = []
    raw: dict[str, str] = {}
    for name, args in ASKS:
        before = set(p.name for p in out.iterdir()) if out.exists() else set()
        res = runner.invoke(app, ["ask", *args, "--out", str(out)])
        assert res.exit_code == 0, res.output
        (run_id,) = set(p.name for p in out.iterdir()) - before
        run_ids.append(run_id)
        raw[name] = (out / run_id / "report.md").read_text(encoding="utf-8")
    # the re-rendered report of the first run (README: sgieval report <run_id>)
    res = runner.invoke(app, ["report", run_ids[0], "--out", str(out)])
    assert res.exit_code == 0, res.output
    raw["chemistry_rerendered.md"] = (out / run_ids[0] / "report.md").read_text(encoding="utf-8")
    # the comparison of the chemistry run with the all-questions run (README: sgieval compare <run_a> <run_b>)
    dest = tmp / "compare"
    res = runner.invoke(app, ["compare", run_ids[0], run_ids[1], "--out", str(out), "--dest", str(dest)])
    assert res.exit_code == 0, res.output
    raw["compare_chemistry_all.md"] = (dest / "compare.md").read_text(encoding="utf-8")
    texts = {name: _normalise(text, out, data_dir, run_ids) for name, text in raw.items()}
    texts["rigor_judged.md"] = _rigor_report(tmp / "rigor", data_dir)
    return texts


def _rigor_report(tmp: Path, data_dir: Path) -> str:
    """The report of the rigor request on the SGI-Bench idea-generation fixtures, judged by the scripted judge of
    tests/graphs/test_rigor_scripted.py (offline planners), with the fixture and run folders replaced."""
    from sgieval.tests.conftest import FIXTURES
    from sgieval.tests.graphs.test_rigor_scripted import judge_model, run_graph

    _, _, report = run_graph(tmp, judges=[judge_model()])
    return _normalise(report.replace(str(FIXTURES), "<fixtures>"), tmp, data_dir, [])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, sciaidan_dir) -> dict[str, str]:
    data_dir = sciaidan_dir.parent
    mp = pytest.MonkeyPatch()
    mp.setenv("SGIEVAL_DATA", str(data_dir))
    for var in CLEARED_ENV:
        mp.delenv(var, raising=False)
    try:
        yield _render_all(tmp_path_factory.mktemp("golden"), data_dir)
    finally:
        mp.undo()


@pytest.mark.parametrize(
    "name", [n for n, _ in ASKS] + ["chemistry_rerendered.md", "compare_chemistry_all.md", "rigor_judged.md"]
)
def test_report_is_byte_identical_to_golden(rendered, name):
    expected = (GOLDEN / name).read_text(encoding="utf-8")
    assert rendered[name] == expected, f"{name} differs from tests/fixtures/golden/{name}"


def test_rerendered_report_equals_the_run_report(rendered):
    assert rendered["chemistry_rerendered.md"] == rendered["chemistry.md"]


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    data = Path(os.environ.get("SGIEVAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    os.environ["SGIEVAL_DATA"] = str(data)
    for var in CLEARED_ENV:
        os.environ.pop(var, None)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SGIEVAL_CACHE_DIR"] = str(Path(tmp) / "cache")
        for name, text in _render_all(Path(tmp), data).items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
            print("wrote", GOLDEN / name)
