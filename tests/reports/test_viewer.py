"""The HTML viewer: its data, and the page in a real browser.

The browser tests drive Debian's headless Chromium (``/usr/bin/chromium``, installed by install.sh) with
Playwright; screenshots are kept in the test's run folder (``<run>/screenshots/``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import GENERIC, Item, Response, RunStore, Score
from sgieval.reports.viewer import build_viewer_data, judge_panel, record_flags, write_viewer
from sgieval.tests.browser import Chromium
from sgieval.tests.served import free_port, serve_viewer

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"


# ------------------------------------------------------------------------- data
def test_judge_panel_values():
    # rubric: each judge's weighted mean x10 with weights c1=1, c2=3
    # judge a: 10 * (1*6 + 3*8) / 4 = 75; judge b: 10 * (1*4 + 3*10) / 4 = 85
    s = Score(
        item_id="i",
        model="m",
        metric="r",
        value=80.0,
        judge="a,b",
        details={"per_judge": {"a": {"c1": 6, "c2": 8}, "b": {"c1": 4, "c2": 10}}, "weights": {"c1": 1, "c2": 3}},
    )
    assert judge_panel(s) == {"a": 75.0, "b": 85.0}
    # SFBench explanation judges: {judge: level}
    s2 = Score(item_id="i", model="m", metric="c", value=4.0, judge="a,b", details={"levels": {"a": 5, "b": 3}})
    assert judge_panel(s2) == {"a": 5.0, "b": 3.0}
    assert judge_panel(Score(item_id="i", model="m", metric="x", value=1.0)) == {}


def test_flags_and_statuses():
    r = Response(item_id="i", model="m", text="abc", metadata={"finish_reason": "length", "flags": ["odd"]})
    assert record_flags(r) == ["truncated", "odd"]
    s = Score(
        item_id="i",
        model="m",
        metric="j",
        value=None,
        status="judge_error",
        error="bad reply",
        evidence=[{"kind": "judge_reply", "injection_suspected": True}],
    )
    assert record_flags(s) == ["injection_suspected"]
    # stored SciAidanBench records the report lists under Failures (censored: stopped by an error; missing: empty)
    censored = Score(
        item_id="i",
        model="m",
        metric="aidan_accepted_answers",
        value=3.0,
        details={"censored": True, "flag_reason": "stopped by an error"},
    )
    missing = Score(item_id="i", model="m", metric="aidan_accepted_answers", value=0.0, details={"missing": True})
    assert record_flags(censored) == ["censored"] and record_flags(missing) == ["missing"]
    assert record_flags(Score(item_id="i", model="m", metric="x", value=1.0, details={"censored": False})) == []
    na = Score(
        item_id="i",
        model="m",
        metric="aidan_mean_coherence",
        status="not_run",
        error="no accepted answers with a coherence_score",
    )
    no_judge = Score(item_id="i", model="m", metric="j", status="not_run", error="no judge")
    index, _ = build_viewer_data([], [], [na, no_judge])
    assert [s[3] for s in index["scores"]] == ["not_applicable", "not_run"]


def test_viewer_data_rows_and_texts():
    items = [
        Item(id="t/0", benchmark="t", task=GENERIC, discipline="chem", prompt="p0", reference="a0"),
        Item(id="t/1", benchmark="t", task=GENERIC, discipline="bio", prompt="p1", reference="a1"),
        Item(id="t/2", benchmark="t", task=GENERIC, discipline="bio", prompt="p2", reference="a2"),
    ]
    responses = [
        Response(item_id="t/1", model="m2", text="x1"),
        Response(item_id="t/0", model="m1", text="a0"),
        Response(item_id="t/0", model="m2", text="", error="timeout"),
    ]
    scores = [
        Score(item_id="t/0", model="m1", metric="em", value=1.0, rationale="exact"),
        Score(item_id="t/1", model="m2", metric="em", value=0.0, rationale="differs"),
        Score(item_id="t/0", model="m2", metric="em", status="infra_error", error="no response: timeout"),
    ]
    index, texts = build_viewer_data(
        items,
        responses,
        scores,
        report={"ranking": {"rows": [{"model": "m2"}, {"model": "m1"}]}},
        specs=[{"name": "em", "scale": "0-1", "hib": True, "kind": "objective"}],
    )
    assert index["models"] == ["m2", "m1"]  # the ranking's order
    assert index["metrics"] == [{"name": "em", "scale": "0-1", "hib": True, "kind": "objective"}]
    # rows sorted by item then model index; t/2 has no record: one row with model -1
    assert index["rows"] == [
        [0, 0, "infra_error", [], [2]],
        [0, 1, "ok", [], [0]],
        [1, 0, "ok", [], [1]],
        [2, -1, "", [], []],
    ]
    assert index["scores"] == [
        [1, 0, 1.0, "ok", [], "objective", {}],
        [2, 0, 0.0, "ok", [], "objective", {}],
        [0, 0, None, "infra_error", [], "objective", {}],
    ]
    assert [t[0] for t in texts["rows"]] == ["", "a0", "x1", ""]
    assert texts["rows"][0][3] == "timeout"
    assert [t[0] for t in texts["scores"]] == ["exact", "differs", ""]
    assert texts["items"][1] == ["p1", "a1", {}]


# ------------------------------------------------------------------------ browser
@pytest.fixture(scope="module")
def chem_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("viewer-runs")
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run_dir,) = [p.parent for p in out.glob("*/config.json")]
    return run_dir


def test_view_writes_a_self_contained_folder(chem_run):
    res = runner.invoke(app, ["view", str(chem_run)])
    assert res.exit_code == 0, res.output
    v = chem_run / "viewer"
    assert res.output.strip() == f"viewer: {v / 'index.html'}"
    assert sorted(p.name for p in v.iterdir()) == ["data.js", "figures", "index.html", "text.js"]
    assert (v / "figures" / "ranking.png").is_file()
    html = (v / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # nothing loaded from the network
    data = json.loads((v / "data.js").read_text(encoding="utf-8").removeprefix("window.SGV_DATA = ").rstrip(";\n"))
    assert [r["model"] for r in data["report"]["ranking"]["rows"]] == [
        "replay:o1-mini",
        "replay:openai/4o",
        "replay:phi4:latest",
        "replay:llama3.3:latest",
        "replay:qwen2.5:latest",
        "replay:mistral:latest",
    ]
    assert [r["total"] for r in data["report"]["ranking"]["rows"]] == ["296", "274", "200", "194", "180", "107"]
    # 25 items x 6 models, plus one corpus-level row per model (the pooled means, METRICS.md D.15); scores:
    # 6 per-question metrics per (item, model) and 4 corpus-level ones per model
    assert len(data["items"]) == 25 and len(data["rows"]) == 150 + 6 and len(data["scores"]) == 25 * 6 * 6 + 6 * 4
    assert [r[0] for r in data["rows"]].count(-1) == 6


@pytest.mark.browser
def test_browser_chemistry_item(chem_run, tmp_path):
    res = runner.invoke(app, ["view", str(chem_run)])
    assert res.exit_code == 0, res.output
    store = RunStore(chem_run)
    resp = next(
        r for r in store.read("responses") if r.item_id == "sciaidanbench/chemistry/1" and r.model == "replay:o1-mini"
    )
    acc = next(
        s
        for s in store.read("scores")
        if s.item_id == "sciaidanbench/chemistry/1"
        and s.model == "replay:o1-mini"
        and s.metric == "aidan_accepted_answers"
    )
    shots = chem_run / "screenshots"
    shots.mkdir(exist_ok=True)
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto((chem_run / "viewer" / "index.html").as_uri())
        page.wait_for_selector("#ranking")
        assert page.inner_text("#ranking tbody tr:first-child td:nth-child(2)") == "replay:o1-mini"
        assert page.inner_text("#ranking tbody tr:first-child td:nth-child(5)") == "296"
        # 25 items x 6 models, and the corpus-level row of each model counted apart
        assert page.inner_text("#overview-items") == (
            "25 items, 150 item x target model rows, 6 corpus-level rows (one value per model over all items)"
        )
        page.screenshot(path=str(shots / "overview.png"), full_page=True)
        page.click("#nav-items")
        page.select_option("#facet-model", "replay:o1-mini")
        # its 25 items and its corpus-level row (the pooled means)
        page.wait_for_function("document.querySelector('#pager-info').textContent.includes('26 rows')")
        assert page.inner_text("#pager-info") == "page 1 of 1 · 26 rows"
        assert set(page.eval_on_selector_all("#items-table tbody tr", "rs => rs.map(r => r.dataset.model)")) == {
            "replay:o1-mini"
        }
        page.screenshot(path=str(shots / "items-o1-mini.png"), full_page=True)
        page.click("a.item-link[href*='chemistry%2F1?']")
        col = page.locator(".model-col[data-model='replay:o1-mini']")
        col.wait_for()
        assert page.inner_text("#item-id") == "sciaidanbench/chemistry/1"
        assert page.text_content("#prompt") == (
            "Suggest a new pseudo-planar molecule that can efficiently absorb "
            "sunlight. Just output the SMILES representation."
        )
        answer = col.locator("pre.answer-text").text_content()
        assert answer == resp.text == "[1] C1=CC=CC=C1C2=CC=CC=C2O\n\n[2] C1=CC=CC=C1C2=CC=CC=C2N"
        score = col.locator(".score[data-metric='aidan_accepted_answers']")
        assert score.locator(".value").text_content() == "1" and acc.value == 1.0
        assert (
            score.locator(".rationale").text_content()
            == acc.rationale
            == ("1 accepted of 2 stored answers; stopped by embedding_dissimilarity_threshold")
        )
        page.set_viewport_size({"width": 1400, "height": 1400})
        page.screenshot(path=str(shots / "item-chemistry-1.png"), full_page=True)
        assert b.errors == []
    finally:
        b.close()
    assert sorted(p.name for p in shots.iterdir()) == ["item-chemistry-1.png", "items-o1-mini.png", "overview.png"]


def _long_run(run_dir: Path, n: int) -> Path:
    items = [
        Item(
            id=f"long/{k}",
            benchmark="long",
            task=GENERIC,
            discipline="chem" if k % 2 else "bio",
            prompt=f"question number {k}" + (" needle" if k % 40 == 7 else ""),
            reference=str(k),
        )
        for k in range(n)
    ]
    responses = [Response(item_id=i.id, model="openai:m", text=f"answer {k}") for k, i in enumerate(items)]
    scores = [
        Score(item_id=i.id, model="openai:m", metric="exact_match", value=float(k % 3 == 0), rationale="em")
        for k, i in enumerate(items)
    ]
    scores[5] = Score(item_id="long/5", model="openai:m", metric="exact_match", status="parse_error", error="no answer")
    return write_viewer(run_dir, items, responses, scores, config={"run_id": "long-run", "request": "long"})


@pytest.mark.browser
def test_browser_long_run_pages(tmp_path):
    run_dir = tmp_path / "long-run"
    index = _long_run(run_dir, 120)
    shots = run_dir / "screenshots"
    shots.mkdir()
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(index.as_uri() + "#/items")
        page.wait_for_selector("#items-table")
        ids = lambda: page.eval_on_selector_all("#items-table tbody tr", "rs => rs.map(r => r.dataset.item)")  # noqa: E731
        assert page.inner_text("#pager-info") == "page 1 of 3 · 120 rows"
        assert ids() == [f"long/{k}" for k in range(50)]
        assert page.is_disabled("#prev")
        page.click("#next")
        page.wait_for_function("document.querySelector('#pager-info').textContent.startsWith('page 2')")
        assert ids() == [f"long/{k}" for k in range(50, 100)]
        page.screenshot(path=str(shots / "items-page-2.png"), full_page=True)
        page.click("#next")
        page.wait_for_function("document.querySelector('#pager-info').textContent.startsWith('page 3')")
        assert ids() == [f"long/{k}" for k in range(100, 120)]
        assert page.is_disabled("#next")
        # facet + search over prompts: 'needle' in items 7, 47, 87; discipline chem = odd k
        page.wait_for_selector("#app[data-texts='loaded']")
        page.select_option("#facet-discipline", "chem")
        page.wait_for_function("document.querySelector('#pager-info').textContent.includes('60 rows')")
        page.fill("#search", "needle")
        page.wait_for_function("document.querySelector('#pager-info').textContent.includes('3 rows')")
        assert ids() == ["long/7", "long/47", "long/87"]
        # failures filter: the one parse_error
        page.goto(index.as_uri() + "#/items?failed=1")
        page.wait_for_function("document.querySelector('#pager-info').textContent.endsWith(' 1 row')")
        assert ids() == ["long/5"]
        assert b.errors == []
    finally:
        b.close()
    assert (shots / "items-page-2.png").is_file()


def test_view_serve_on_loopback(chem_run):
    port = free_port()
    with serve_viewer(str(chem_run), "--port", str(port)) as served:
        line = served["line"]
        m = re.search(rf"at (http://127\.0\.0\.1:{port}/([A-Za-z0-9_-]+)/)index\.html \(Ctrl-C to stop\)", line)
        assert m and line.startswith(f"serving {chem_run / 'viewer'} at "), line
        url = m.group(1)
        r = httpx.get(f"{url}index.html", timeout=5)
        assert (
            r.status_code == 200 and "<title>sgieval: Which model is the most creative in chemistry?</title>" in r.text
        )
        js = httpx.get(f"{url}data.js", timeout=5)
        assert js.status_code == 200 and js.text.startswith("window.SGV_DATA = ")
        assert httpx.get(f"{url}figures/ranking.png", timeout=5).status_code == 200
