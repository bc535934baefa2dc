"""Report sections are plug-ins: a new section is one new module in ``reports/sections/`` that declares its builder
with ``@section``, and it shows in report.md, report.json and the viewer's data, and the narrative's fact check reads
its tables.  The tests add toy section modules (written to a folder on the package's path, so no product file
changes) and check the contract, never the whole list of built-in sections."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import textwrap

import pytest

from sgieval.agents.reporting import build_report
from sgieval.core import Item, MetricSpec, Response, Score
from sgieval.reports import ReportContext, Table
from sgieval.reports import sections as sections_pkg
from sgieval.reports.sections import builders
from sgieval.reports.viewer import build_viewer_data, write_viewer
from sgieval.tests.conftest import scripted

SCORE = MetricSpec(name="score", tasks=["generic"], range=(0.0, 10.0), primary=True, description="points")
ITEMS = [Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline="physics", prompt=f"q{i}") for i in range(4)]
MODELS = ["m-a", "m-b"]
VALUES = {"m-a": [9.0, 7.0, 8.0, 6.0], "m-b": [5.0, 6.0, 4.0, 5.0]}  # means 7.50 and 5.00
HEADER = {
    "run_id": "r1",
    "request": "Which model is best?",
    "selection_reason": "test",
    "filters": "none",
    "k": "all matches",
    "n_items": 4,
    "sampling": "all",
    "seed": 0,
    "models": "m-a, m-b (target)",
    "judges": "none",
    "agent": "none",
    "metrics": "score",
    "primary": "score",
    "primary_reason": "asked",
    "data_source": "test",
    "tools": "none",
    "scope": "whole catalog",
    "extra": {},
}

TOY = '''
"""A toy section: the count of items per model with a value above 5, times 111 (a number in no other table)."""

from sgieval.reports.blocks import Section, Table, Text
from sgieval.reports.context import ReportContext
from sgieval.reports.sections import section


@section("toy", title="Toy section", before="criteria")
def toy(ctx: ReportContext) -> Section:
    rows = [[m, str(sum(1 for s in ctx.scores if s.model == m and (s.value or 0) > 5.0) * 111)] for m in ctx.models]
    return Section(
        "toy",
        "Toy section",
        [Text("Items above 5, times 111."), Table(["target model", "items above 5 x 111"], rows, name="toy")],
        answer={"caveats": ["The toy section says hello."]},
    )
'''


def _scores() -> list[Score]:
    return [
        Score(item_id=it.id, model=m, metric="score", value=v[j], rationale="r")
        for m, v in VALUES.items()
        for j, it in enumerate(ITEMS)
    ]


def _build(tmp_path, agent=None, usage=None) -> str:
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=HEADER,
                items=ITEMS,
                responses=[Response(item_id=i.id, model=m, text="...") for m in MODELS for i in ITEMS],
                scores=_scores(),
                specs=[SCORE],
                primary="score",
                models=MODELS,
                n_resamples=199,
                seed=0,
                usage=usage,
            ),
            agent=agent,
        )
    )
    return path.read_text()


@pytest.fixture
def add_section(tmp_path_factory, monkeypatch):
    """``add_section(name, source)`` writes ``name.py`` to a folder on ``reports.sections``' path (what adding a
    file to ``reports/sections/`` does) and returns a function that removes it again."""
    folder = tmp_path_factory.mktemp("sections")
    monkeypatch.setattr(sections_pkg, "__path__", [*sections_pkg.__path__, str(folder)])
    added: list[str] = []

    def remove(name: str) -> None:
        (folder / f"{name}.py").unlink(missing_ok=True)
        sys.modules.pop(f"{sections_pkg.__name__}.{name}", None)
        importlib.invalidate_caches()

    def add(name: str, source: str):
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        added.append(name)
        return lambda: remove(name)

    yield add
    for name in added:
        remove(name)


@pytest.fixture
def toy(add_section):
    return add_section("toy", TOY)


def test_a_section_module_shows_in_the_report_json_and_viewer(tmp_path, toy):
    text = _build(tmp_path)
    # m-a has 4 values above 5 (9, 7, 8, 6) -> 444; m-b one (6) -> 111
    assert "## Toy section\n\nItems above 5, times 111.\n\n| target model | items above 5 x 111 |" in text
    assert "| m-a | 444 |" in text and "| m-b | 111 |" in text
    # in its declared place: before "Rubric breakdowns", so after "All metrics" and before Limitations
    assert text.index("## All metrics") < text.index("## Toy section") < text.index("## Limitations")
    assert "- **Caveats:**\n  - The toy section says hello." in text or "The toy section says hello." in text
    data = json.loads((tmp_path / "report.json").read_text())
    toy_json = next(s for s in data["sections"] if s["key"] == "toy")
    assert toy_json["title"] == "Toy section"
    assert toy_json["blocks"][1] == {
        "kind": "table",
        "name": "toy",
        "headers": ["target model", "items above 5 x 111"],
        "rows": [["m-a", "444"], ["m-b", "111"]],
    }
    index, _ = build_viewer_data(ITEMS, [], _scores(), report=data)
    assert [s["key"] for s in index["report"]["sections"]].count("toy") == 1
    html = write_viewer(tmp_path, ITEMS, [], _scores(), report=data)
    assert '"key":"toy"' in (html.parent / "data.js").read_text()
    # the viewer's overview loops over the report's sections (no per-section code)
    js = html.read_text()
    assert "(report.sections || []).forEach" in js


def test_the_fact_check_reads_a_section_modules_tables(tmp_path, toy):
    # 444 is only in the toy section's table: an agent may cite it
    ok = "m-a has 444 in the toy table against 111 for m-b."
    text = _build(tmp_path / "a", agent=scripted("narrator", [ok]))
    assert f"- **Summary** (agent model narrator): {ok}" in text
    # without the toy section the same text cites numbers of no table: regenerated once, then left out
    toy()
    text = _build(tmp_path / "b", agent=scripted("narrator", [ok, ok]))
    assert "## Toy section" not in text
    assert "- **Summary**" not in text
    assert "narrative attempt 1 cited numbers not in the tables: ['444', '111']" in text


def test_a_failing_builder_loses_only_its_section(tmp_path, add_section):
    add_section(
        "broken",
        """
        from sgieval.reports.sections import section

        @section("broken", title="Broken", after="definitions")
        def broken(ctx):
            raise RuntimeError("no data")
        """,
    )
    text = _build(tmp_path)
    assert "- Report section broken could not be built: RuntimeError: no data" in text
    assert "## All metrics" in text and "| 1 | m-a | 7.50 |" in text


def test_builtin_sections_keep_their_relative_order(tmp_path):
    names = [b.name for b in builders()]
    for name in ("ranking", "coverage", "sgi", "metrics", "criteria", "discipline", "task", "usage"):
        assert name in names
    assert names[0] == "ranking"
    assert names.index("ranking") < names.index("metrics") < names.index("usage") < names.index("reliability")
    assert names.index("reliability") < names.index("retrieval") < names.index("recheck")
    summary = {
        "rows": [
            {
                "model": "m-a",
                "role": "target",
                "calls": 4,
                "cached_calls": 0,
                "failed_calls": 0,
                "input_tokens": 40,
                "output_tokens": 80,
                "latency_s": 1.5,
                "cost": None,
            }
        ],
        "total": {
            "model": "all",
            "role": "",
            "calls": 4,
            "cached_calls": 0,
            "failed_calls": 0,
            "input_tokens": 40,
            "output_tokens": 80,
            "latency_s": 1.5,
            "cost": None,
        },
        "budget_usd": None,
    }
    text = _build(tmp_path, usage=summary)
    # "Cost and usage" is a section like the rest: in report.md and report.json, unknown price n/a (never 0)
    assert "## Cost and usage\n\n| model | role | calls |" in text
    assert "| m-a | target | 4 | 0 | 0 | 40 | 80 | 1.50 | n/a |" in text
    keys = [s["key"] for s in json.loads((tmp_path / "report.json").read_text())["sections"]]
    assert [k for k in keys if k in ("ranking", "metrics", "usage", "definitions")] == [
        "ranking",
        "metrics",
        "usage",
        "definitions",
    ]
    # sections with nothing to show are left out (one judge-free model pair: no reliability, labels, SGI-Score)
    assert not {"reliability", "labels", "sgi", "recheck"} & set(keys)


def test_a_name_or_place_taken_by_another_section_is_refused(add_section):
    remove = add_section(
        "toy_twin",
        """
        from sgieval.reports.sections import section

        @section("ranking", title="Another ranking", after="definitions")
        def twin(ctx):
            return None
        """,
    )
    with pytest.raises(ValueError, match="report section 'ranking' is declared twice"):
        builders()
    remove()
    add_section(
        "toy_clash",
        """
        from sgieval.reports.sections import section

        @section("clash", title="Clash", after="metrics")
        def clash(ctx):
            return None
        """,
    )
    with pytest.raises(ValueError, match="are both placed directly after 'metrics'"):
        builders()


def test_a_misplaced_or_malformed_section_is_refused(add_section):
    add_section(
        "toy_lost",
        """
        from sgieval.reports.sections import section

        @section("lost", title="Lost", after="no_such_section")
        def lost(ctx):
            return None
        """,
    )
    with pytest.raises(ValueError, match="placed after 'no_such_section', which is not a report section"):
        builders()
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        Table(["a", "b"], [["x"]])


def test_browser_shows_every_section_and_the_answer_list(tmp_path, toy):
    from sgieval.tests.browser import Chromium

    _build(tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    html = write_viewer(tmp_path, ITEMS, [], _scores(), report=data)
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(html.as_uri())
        page.wait_for_selector("#ranking")
        keys = page.eval_on_selector_all("section.report-section", "s => s.map(x => x.dataset.section)")
        assert keys == [s["key"] for s in data["sections"]]
        assert keys.index("metrics") < keys.index("toy") < keys.index("definitions")
        assert page.inner_text("section[data-section='toy'] h2") == "Toy section"
        cells = page.eval_on_selector_all(
            "table[data-table='toy'] tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))"
        )
        assert cells == [["m-a", "444"], ["m-b", "111"]]
        items = page.eval_on_selector_all("#answer > ul > li > b", "bs => bs.map(b => b.textContent)")
        assert items[0] == "Verdict: " and "Caveats: " in items
        assert b.errors == []
    finally:
        b.close()
