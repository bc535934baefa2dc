"""A judge added by ``ask --into RUN --judge J`` is named in the judge field of ``sgieval runs`` and of a
comparison's run table, never in the target-models field; and the settings a comparison lists as different name
the added judge (``added_judges``), not ``sent_params`` (whose only difference is the added judge's parameters).
Through the CLI against the local mock server; the run is the one of :mod:`tests.graphs.test_into_judge`.
"""

from __future__ import annotations

import shutil

from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.tests.graphs.test_into_judge import _rows, served  # noqa: F401 - the fixture

runner = CliRunner()


def _md_rows(md: str, header: str) -> list[list[str]]:
    lines = md.splitlines()
    i = next(k for k, x in enumerate(lines) if x.startswith(header))
    out = []
    for x in lines[i + 2 :]:
        if not x.startswith("|"):
            break
        out.append([c.strip() for c in x.strip("|").split("|")])
    return out


def test_the_added_judge_is_in_the_judge_field_only(served):  # noqa: F811
    run_dir, mock, replies, into = served
    before = run_dir.parent / "B"
    shutil.copytree(run_dir, before)  # the run as it was before the judge was added
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 0, res.output
    (_, added) = _rows(run_dir / "invocations.jsonl")
    when = added["time"].replace("T", " ")[:16]

    res = runner.invoke(app, ["runs", "--out", str(run_dir.parent)], terminal_width=600)
    assert res.exit_code == 0, res.output
    (line,) = [x for x in res.output.splitlines() if "judge2" in x]  # the grown run's line (B is its copy before)
    assert line.strip().endswith(
        "; target models: openai:model-a, openai:model-b; "
        f"judge: openai:judge (+ openai:judge2 added by ask --into at {when} UTC)"
    )
    assert "added beside" not in res.output

    res = runner.invoke(app, ["compare", str(before), str(run_dir), "--dest", str(run_dir.parent / "cmp")])
    assert res.exit_code == 0, res.output
    md = (run_dir.parent / "cmp" / "compare.md").read_text()
    rows = _md_rows(md, "| run | started (UTC) |")
    assert [r[3:5] for r in rows] == [
        ["openai:model-a, openai:model-b", "openai:judge"],
        ["openai:model-a, openai:model-b", f"openai:judge (+ openai:judge2 added by ask --into at {when} UTC)"],
    ]
    assert "added_judges" in md and "sent_params" not in md
