"""Labelling in the viewer: `sgieval view RUN --serve` saves the researcher's labels to labels.jsonl through its
own page only; the static viewer keeps them in the browser and downloads a file `sgieval labels import` accepts.

The run is ``test_labels.judged_run`` (12 items, target models "tidy" and "terse", the rigor rubric of six equally
weighted criteria scored by a scripted judge whose rationale is "seen N").  Browser tests drive Debian's headless
Chromium through Playwright; the forged requests go over real sockets (httpx).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.tests.browser import Chromium
from sgieval.tests.served import SecondOrigin, serve_viewer


def _import_test_labels():
    """tests/test_labels.py as a module (the suite imports test files by path, not as a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_sgieval_test_labels", Path(__file__).with_name("test_labels.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


judged_run = _import_test_labels().judged_run  # the judged run fixture, reused

runner = CliRunner()


def _rigor(run: Path):
    from sgieval.api import run_metric_specs

    return run_metric_specs(sgieval.load_run(run))["rigor"]


def _labels_bytes(run: Path) -> bytes:
    p = run / "labels.jsonl"
    return p.read_bytes() if p.exists() else b""


@pytest.fixture(scope="module")
def served(judged_run, tmp_path_factory):  # noqa: F811
    """`sgieval view RUN --serve --labeller ana` on a copy of the judged run: {run, page, base, port, token}."""
    run = Path(shutil.copytree(judged_run, tmp_path_factory.mktemp("served-labels") / "run"))
    with serve_viewer(str(run), "--port", "0", "--labeller", "ana", timeout=90) as served:
        yield {"run": run, **served}


def _unit(run: Path) -> dict:
    """A valid POST body: one label per rigor criterion of the first item for the first target model."""
    records = sgieval.load_run(run)
    model = sorted({r.model for r in records.responses})[0]
    return {
        "labeller": "forger",
        "labels": [
            {"item_id": "jsonl:bench/q0", "model": model, "metric": "rigor", "criterion": c.name, "value": 4}
            for c in _rigor(run).criteria
        ],
    }


def _post(served, body, headers=None, path="labels", **kw):
    h = {"Content-Type": "application/json", "X-Sgieval-Token": served["token"]}
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    return httpx.post(served["base"] + path, content=json.dumps(body), headers=h, timeout=10, **kw)


@pytest.mark.parametrize(
    "change, status",
    [
        ({"headers": {"X-Sgieval-Token": None}}, 403),  # no token header
        ({"headers": {"X-Sgieval-Token": "A" * 32}}, 403),  # a wrong token
        ({"path": "../labels"}, 404),  # not under the session path
        ({"headers": {"Host": "attacker.example:{port}"}}, 421),  # DNS rebinding
        ({"headers": {"Origin": "http://127.0.0.1:9"}}, 403),  # another origin
        ({"headers": {"Sec-Fetch-Site": "cross-site"}}, 403),
        ({"headers": {"Sec-Fetch-Site": "same-site"}}, 403),
        ({"headers": {"Content-Type": "text/plain"}}, 415),  # what a form or a no-cors fetch can send
    ],
)
def test_a_forged_post_is_refused_and_changes_nothing(served, change, status):
    before = _labels_bytes(served["run"])
    headers = {
        k: (v.format(port=served["port"]) if isinstance(v, str) else v) for k, v in change.get("headers", {}).items()
    }
    if change.get("path"):
        r = httpx.post(
            f"http://127.0.0.1:{served['port']}/labels",
            content=json.dumps(_unit(served["run"])),
            headers={"Content-Type": "application/json", "X-Sgieval-Token": served["token"]},
            timeout=10,
        )
    else:
        r = _post(served, _unit(served["run"]), headers)
    assert r.status_code == status, r.text
    assert _labels_bytes(served["run"]) == before
    # a CORS preflight is never granted
    pre = httpx.options(served["base"] + "labels", headers={"Origin": "http://127.0.0.1:9"}, timeout=10)
    assert pre.status_code == 403 and "access-control-allow-origin" not in pre.headers


def test_a_bad_label_gets_400_with_the_reason_and_a_good_one_is_saved(served):
    run = served["run"]
    before = _labels_bytes(run)
    body = _unit(run)
    body["labels"][2]["value"] = 12
    r = _post(served, body)
    assert r.status_code == 400
    crit = _rigor(run).criteria[2].name
    assert r.json()["error"] == (
        f"POST labels label 3 field value: value 12 is outside the range of criterion {crit} (0 to 10)."
        f" Fix: give a value from 0 to 10; none of the {len(body['labels'])} labels was saved"
    )
    for bad, reason in [
        ({**body, "labels": [{**body["labels"][0], "item_id": "jsonl:bench/q99", "value": 3}]}, "unknown item"),
        ({**body, "labels": [{**body["labels"][0], "value": "high"}]}, "field value"),
        ({**body, "labels": [{**body["labels"][0], "metric": "exact_match"}]}, "is not labelled here"),
        ({"labels": []}, "non-empty labels list"),
    ]:
        r = _post(served, bad)
        assert r.status_code == 400 and reason in r.json()["error"], r.text
    r = httpx.post(
        served["base"] + "labels",
        content=b"{not json",
        headers={"Content-Type": "application/json", "X-Sgieval-Token": served["token"]},
        timeout=10,
    )
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    assert _labels_bytes(run) == before
    # the same request with the token and good values is saved: the refusals above are the guard's doing
    good = _unit(run)
    good["labels"] = [{**lab, "value": k} for k, lab in enumerate(good["labels"], 1)]
    r = _post(served, good)
    assert r.status_code == 200, r.text
    saved = sgieval.load_run(run).labels[-7:]
    assert [(x.criterion, x.value, x.labeller) for x in saved] == [
        *[(c.name, float(k), "forger") for k, c in enumerate(_rigor(run).criteria, 1)],
        (None, 35.0, "forger"),  # 10 x the mean of 1..6 (equal weights)
    ]
    assert {x.sample for x in saved} == {"random"}  # q0 is in the seeded sample of 30 per model (12 items)


def _label_next_unit(page, run: Path, values: list[float]) -> tuple[str, str]:
    """From #/labels, follow "label the next unit", check the judge's rigor score is hidden, type ``values``
    (one per criterion) and save; returns the unit (item id, model)."""
    page.wait_for_selector("#label-next")
    href = page.get_attribute("#label-next", "href")
    page.click("#label-next")
    m = re.fullmatch(r"#/item/([^?]+)\?model=(.+)", href)
    from urllib.parse import unquote

    item, model = unquote(m.group(1)), unquote(m.group(2).replace("+", " "))
    col = page.locator(f".model-col[data-model='{model}']")
    col.locator(".label-form .label-save").wait_for()
    # blind: no score value, no rationale of rigor for this unit before the label is saved
    assert col.locator(".score[data-metric='rigor']").get_attribute("class") == "score hidden-score"
    assert "seen " not in col.inner_text()
    inputs = col.locator(".label-form input.label-value")
    crits = [c.name for c in _rigor(run).criteria]
    assert inputs.evaluate_all("xs => xs.map(x => x.dataset.criterion)") == crits
    form_text = col.locator(".label-form").inner_text()
    for c in _rigor(run).criteria:  # every criterion with its anchors
        assert c.name in form_text and all(text in form_text for text in c.anchors.values())
    for k, v in enumerate(values):
        inputs.nth(k).fill(str(v))
    return item, model


@pytest.mark.browser
def test_a_labelling_session_in_chromium_writes_labels_jsonl_and_stays_blind(served):
    run = served["run"]
    records = sgieval.load_run(run)
    b = Chromium()
    try:
        page = b.page
        page.goto(served["page"] + "#/labels")
        page.wait_for_selector("#app[data-labelling='served']")
        assert page.input_value("#labeller") == "ana"  # the session's labeller
        item, model = _label_next_unit(page, run, [7, 8, 6, 9, 5, 12])
        col = page.locator(f".model-col[data-model='{model}']")
        before = _labels_bytes(run)
        col.locator(".label-save").click()
        assert "risk awareness: 12 is outside 0 to 10" in col.locator(".label-msg").inner_text()
        assert _labels_bytes(run) == before
        col.locator("input.label-value").nth(5).fill("4")
        col.locator(".label-save").click()
        col.locator(".label-saved").wait_for()
        judge = next(s for s in records.scores if s.metric == "rigor" and (s.item_id, s.model) == (item, model))
        score = col.locator(".score[data-metric='rigor']")
        # after saving, the judge's score and rationale are shown
        assert score.locator(".value").inner_text() == f"{judge.value:g}"
        assert score.locator(".rationale").inner_text() == judge.rationale
        saved = sgieval.load_run(run).labels
        mine = [x for x in saved if x.labeller == "ana"]
        assert [(x.item_id, x.model, x.criterion, x.value) for x in mine] == [
            *[(item, model, c.name, v) for c, v in zip(_rigor(run).criteria, [7, 8, 6, 9, 5, 4])],
            (item, model, None, pytest.approx(65.0)),  # 10 x (7+8+6+9+5+4)/6
        ]
        assert {x.sample for x in mine} == {"random"}
        # the served page refuses a bad value with the server's reason (a POST from the page itself)
        reply = page.evaluate(
            """async (unit) => {
                const r = await fetch('labels', {method: 'POST', headers: {'Content-Type': 'application/json',
                  'X-Sgieval-Token': location.pathname.split('/')[1]},
                  body: JSON.stringify({labeller: 'ana', labels: [{item_id: unit[0], model: unit[1], metric: 'rigor',
                  criterion: null, value: 101}]})});
                return [r.status, (await r.json()).error];
            }""",
            [item, model],
        )
        assert reply == [
            400,
            "POST labels label 1 field value: value 101 is outside the range of metric rigor (0 to 100). Fix: give a value from 0 to 100",
        ]
        # a reload keeps the unit labelled (session.js carries the saved labels) and the next unit is another
        page.goto(served["page"] + "#/labels")
        page.wait_for_selector("#app[data-labelling='served']")
        assert page.get_attribute("#label-next", "href") != f"#/item/{item}"
        assert b.errors == []
    finally:
        b.close()


@pytest.mark.browser
def test_a_second_origin_page_cannot_post_labels(served, tmp_path):
    """Another page on 127.0.0.1 that even knows the session URL: a no-cors fetch, a form POST and a fetch
    with the token header (its preflight is refused) save nothing."""
    run = served["run"]
    body = json.dumps(_unit(run))
    url = served["base"] + "labels"
    attack = SecondOrigin(
        tmp_path,
        "<!doctype html><html><body>"
        f'<form id="f" method="POST" action="{url}" enctype="text/plain" target="sink">'
        f"<input name='{body[:-1]}' value='}}'></form><iframe name='sink'></iframe>"
        "<script>"
        "async function attack() {"
        "  const out = [];"
        f"  try {{ await fetch({json.dumps(url)}, {{method: 'POST', mode: 'no-cors', body: {json.dumps(body)}}}); out.push('no-cors'); }}"
        "  catch (e) { out.push('no-cors'); }"  # sent either way; its reply is opaque or blocked (CORP)
        f"  try {{ await fetch({json.dumps(url)}, {{method: 'POST', headers: {{'Content-Type': 'application/json',"
        f"    'X-Sgieval-Token': {json.dumps(served['token'])}}}, body: {json.dumps(body)}}}); out.push('cors read'); }}"
        "  catch (e) { out.push('cors blocked'); }"
        "  document.getElementById('f').submit();"
        "  return out.join(',');"
        "}"
        "</script></body></html>",
    )
    before = _labels_bytes(run)
    b = Chromium()
    try:
        page = b.page
        page.goto(f"http://127.0.0.1:{attack.port}/attack.html")
        assert page.evaluate("attack()") == "no-cors,cors blocked"
        page.wait_for_timeout(1500)  # the form's POST goes out
        assert _labels_bytes(run) == before
    finally:
        b.close()
        attack.close()


@pytest.mark.browser
def test_the_static_viewer_keeps_labels_in_the_browser_and_its_download_imports(judged_run, tmp_path):  # noqa: F811
    run = Path(shutil.copytree(judged_run, tmp_path / "run"))
    res = runner.invoke(app, ["view", str(run)])
    assert res.exit_code == 0, res.output
    b = Chromium(accept_downloads=True)
    try:
        page = b.page
        page.goto((run / "viewer" / "index.html").as_uri() + "#/labels")
        page.wait_for_selector("#app[data-labelling='static']")
        page.fill("#labeller", "ben")
        page.press("#labeller", "Tab")
        units = []
        for values in ([3, 4, 5, 6, 7, 8], [10, 0, 10, 0, 10, 2]):
            page.goto((run / "viewer" / "index.html").as_uri() + "#/labels")
            item, model = _label_next_unit(page, run, values)
            col = page.locator(f".model-col[data-model='{model}']")
            col.locator(".label-save").click()
            col.locator(".label-saved").wait_for()
            assert "seen " in col.locator(".score[data-metric='rigor'] .rationale").inner_text()
            units.append((item, model, values))
        assert len({u[:2] for u in units}) == 2
        assert not (run / "labels.jsonl").exists()  # nothing is written by the static viewer itself
        page.goto((run / "viewer" / "index.html").as_uri() + "#/labels")
        with page.expect_download() as dl:
            page.click("#label-download")
        assert dl.value.suggested_filename == "labels.jsonl"
        file = tmp_path / "labels.jsonl"
        dl.value.save_as(file)
        assert b.errors == []
    finally:
        b.close()
    res = runner.invoke(app, ["labels", "import", str(run), str(file)])
    assert res.exit_code == 0, res.output
    assert "imported 14 label(s)" in res.output
    labels = sgieval.load_run(run).labels
    crits = [c.name for c in _rigor(run).criteria]
    assert [(x.item_id, x.model, x.criterion, x.value, x.labeller) for x in labels] == [
        row
        for item, model, values in units
        for row in [
            *[(item, model, c, float(v), "ben") for c, v in zip(crits, values)],
            (item, model, None, pytest.approx(10 * sum(values) / 6), "ben"),
        ]
    ]
    assert {x.sample for x in labels} == {"random"} and all(x.created_at for x in labels)


def test_a_unit_outside_the_random_sample_is_marked_and_not_covered(judged_run, tmp_path):  # noqa: F811
    """A unit the labeller picked outside the seeded sample is saved with sample "user", and the estimates of
    the metric then say that PPI's guarantee does not cover them."""
    from sgieval.api import run_metric_specs
    from sgieval.cli.labels import ViewerLabels, viewer_labelling
    from sgieval.metric_pool.labels import label_estimates

    run = Path(shutil.copytree(judged_run, tmp_path / "run"))
    records = sgieval.load_run(run)
    specs = run_metric_specs(records)
    labelling = viewer_labelling(records, specs)
    assert labelling["default"] == "rigor" and [m["name"] for m in labelling["metrics"]] == ["rigor"]
    assert len(labelling["sample"]["rigor"]) == 24  # 30 per model asked, 12 items x 2 models scored
    inside, outside = labelling["sample"]["rigor"][0], labelling["sample"]["rigor"][5]
    labelling["sample"]["rigor"] = labelling["sample"]["rigor"][:2]  # a sample of one item for each model
    receiver = ViewerLabels(records, specs, labelling, "ana")
    for unit in (inside, outside):
        body = {"labels": [{"item_id": unit[0], "model": unit[1], "metric": "rigor", "value": 40}]}
        assert receiver.save(body)[0] == 200
    labels = sgieval.load_run(run).labels
    assert [(x.item_id, x.model, x.sample, x.labeller) for x in labels] == [
        (*inside, "random", "ana"),
        (*outside, "user", "ana"),
    ]
    assert receiver.session()["labels"][1]["sample"] == "user"
    est = label_estimates(records.scores, labels, specs["rigor"])
    assert est.selection == "user" and not est.covered


def test_a_non_rubric_judge_metric_takes_one_value_in_its_declared_range(judged_run, tmp_path):  # noqa: F811
    """A Likert judge metric (-2..2) beside the rubric: the form data carries its range and no criteria, a value
    outside it gets the reason, a value inside is one label with no criterion (no rubric total); an objective
    metric is not offered."""
    from sgieval.api import run_metric_specs
    from sgieval.cli.labels import ViewerLabels, viewer_labelling
    from sgieval.core import MetricSpec, Score

    records = sgieval.load_run(Path(shutil.copytree(judged_run, tmp_path / "run")))
    specs = dict(run_metric_specs(records))
    specs["clarity"] = MetricSpec(name="clarity", tasks=["open_ended"], kind="judge", range=(-2.0, 2.0))
    specs["length_ok"] = MetricSpec(name="length_ok", tasks=["open_ended"], kind="objective")
    model = sorted({r.model for r in records.responses})[0]
    extra = [
        Score(item_id=f"jsonl:bench/q{i}", model=model, metric=name, value=1.0, judge="scripted:careful")
        for i in range(3)
        for name in ("clarity", "length_ok")
    ]
    records.scores = [*records.scores, *extra]
    labelling = viewer_labelling(records, specs)
    by_name = {m["name"]: m for m in labelling["metrics"]}
    assert sorted(by_name) == ["clarity", "rigor"]  # the objective metric needs no judge calibration
    assert (by_name["clarity"]["range"], by_name["clarity"]["criteria"]) == ([-2.0, 2.0], [])
    assert sorted(map(tuple, labelling["sample"]["clarity"])) == [(f"jsonl:bench/q{i}", model) for i in range(3)]
    receiver = ViewerLabels(records, specs, labelling, "ana")
    unit = {"item_id": "jsonl:bench/q1", "model": model, "metric": "clarity"}
    status, reply = receiver.save({"labels": [{**unit, "value": 3}]})
    assert status == 400 and "value 3 is outside the range of metric clarity (-2 to 2)" in reply["error"]
    status, reply = receiver.save({"labels": [{**unit, "value": -1.5}]})
    assert status == 200 and [(x["criterion"], x["value"]) for x in reply["saved"]] == [(None, -1.5)]
