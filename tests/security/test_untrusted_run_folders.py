"""Run folders that come from someone else.

Each case builds a run folder as an attacker (or a careless colleague) could have
shipped it, runs ``sgieval report`` / ``sgieval resume`` on it, and asserts that
nothing outside the run folder changed and that no request reached an address the
user did not give (local mock OpenAI servers: the attacker's and the user's).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import InputError, RunConfig, RunStore, Rubric, slug_name
from sgieval.tests.security.run_folders import CHEM, ask_mock, snapshot, user_env

runner = CliRunner()
FAKE_KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    """A user with an API key and an empty trust store (nothing confirmed before)."""
    user_env(monkeypatch, tmp_path, FAKE_KEY)


def jsonl_benchmark(tmp_path: Path, reference: bool = True) -> Path:
    p = tmp_path / "bench" / "qa.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": "q1", "prompt": "Unit of magnetic flux density?", "task": "short_answer"},
        {"id": "q2", "prompt": "Symbol of gold?", "task": "short_answer"},
    ]
    if reference:
        rows[0]["reference"], rows[1]["reference"] = "tesla", "Au"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def shipped_run(folder: Path, **config) -> Path:
    """A run folder holding only a config.json (as received from someone else)."""
    folder.mkdir(parents=True)
    cfg = {"run_id": folder.name, "yes": True, "tools": [], **config}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_run_id_is_a_plain_name():
    assert RunConfig(run_id="20260101-120000-chem-ab12").run_id == "20260101-120000-chem-ab12"
    for bad in ("../victim", "a/b", "..", ".hidden", "", "x" * 201, "a\x00b", "/abs/victim", "a..b"):
        with pytest.raises(ValueError, match="is not a plain name"):
            RunConfig(run_id=bad)
    assert RunConfig(run_id="x" * 200).run_id == "x" * 200
    assert slug_name("../../../rigor") == "rigor" and slug_name("Risk Awareness!") == "risk_awareness"


@pytest.mark.parametrize("hostile", ["../victim", "../../victim", "/tmp/victim-abs"])
def test_traversal_run_id_in_config_json_is_refused(tmp_path, hostile):
    out = tmp_path / "runs"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    with MockOpenAI(replies=["tesla"]) as mine:
        run = shipped_run(
            out / "shared-run",
            benchmarks=[str(jsonl_benchmark(tmp_path))],
            models=["openai:gpt-4o-mini"],
            run_id=hostile,
        )
        before = snapshot(tmp_path, skip=run)
        for cmd in (["resume", str(run), "--yes", "--base-url", mine.url], ["report", str(run)], ["view", str(run)]):
            res = runner.invoke(app, cmd)
            assert res.exit_code == 2, res.output
            assert res.output.strip() == (
                f"error: {run / 'config.json'}: unreadable run config (run_id: Value error, run_id {hostile!r} is "
                "not a plain name (letters, digits, '.', '_', '-'; no '/' or '..')). Fix: restore the file, or start "
                "a new run with `sgieval ask`"
            )
        assert mine.stats()["requests"] == 0
    assert snapshot(tmp_path, skip=run) == before
    assert (victim / "keep.txt").read_text() == "mine"


def test_resume_never_deletes_a_folder_it_did_not_create(tmp_path):
    # the graph fails inside (no metric applies to items without a reference): the old code removed the
    # run folder because it held no responses, taking the user's own files with it
    with MockOpenAI(replies=["x"]) as attacker, MockOpenAI(replies=["x"]) as mine:
        run = shipped_run(
            tmp_path / "runs" / "shared-run",
            benchmarks=[str(jsonl_benchmark(tmp_path, reference=False))],
            models=["openai:gpt-4o-mini"],
            base_url=attacker.url,
        )
        (run / "notes.txt").write_text("my notes")
        before = snapshot(tmp_path, skip=run)
        for extra in (["--base-url", mine.url], ["--trust-config"]):
            res = runner.invoke(app, ["resume", str(run), "--yes", *extra], input="y\n")  # "y": its models
            assert res.exit_code == 2, res.output
            assert "no metric applies to the selected items" in res.output
            assert (run / "notes.txt").read_text() == "my notes" and (run / "config.json").is_file()
        assert attacker.stats()["requests"] == 0 and mine.stats()["requests"] == 0
    assert snapshot(tmp_path, skip=run) == before


async def test_a_new_run_never_deletes_a_folder_it_was_given(tmp_path):
    # the Python API may name an existing folder as the run's: a failing run removes only a folder it made
    from sgieval.graphs import evaluate as ev

    out = tmp_path / "runs"
    (out / "given").mkdir(parents=True)
    (out / "given" / "notes.txt").write_text("my notes")
    bench = jsonl_benchmark(tmp_path, reference=False)
    for run_id, kept in (("given", True), ("fresh", False)):
        config = RunConfig(
            run_id=run_id, benchmarks=[str(bench)], models=["replay:x"], yes=True, tools=[], out_dir=str(out)
        )
        rt = ev.make_runtime(config, targets=[])
        assert rt.store.created is (not kept)
        with pytest.raises(InputError, match="no metric applies to the selected items"):
            await ev.execute(rt)
        assert (out / run_id).is_dir() is kept
    assert (out / "given" / "notes.txt").read_text() == "my notes"


def test_base_url_from_config_json_is_not_used_without_confirmation(tmp_path):
    with MockOpenAI(replies=["tesla"]) as attacker, MockOpenAI(replies=["tesla"]) as mine:
        run = shipped_run(
            tmp_path / "runs" / "shared-run",
            benchmarks=[str(jsonl_benchmark(tmp_path))],
            models=["openai:gpt-4o-mini"],
            base_url=attacker.url,
        )
        before = snapshot(tmp_path, skip=run)
        # not confirmed (no answer at the prompt, or "n"): refused, nothing sent anywhere
        for answer in ("", "n\n"):
            res = runner.invoke(app, ["resume", str(run), "--yes"], input=answer)
            assert res.exit_code == 2, res.output
            assert (
                f"{run / 'config.json'} asks for settings that send data or run code elsewhere, or models billed "
                f"to your key: base_url = {attacker.url}; models = ['openai:gpt-4o-mini']"
            ) in " ".join(res.output.split())
            assert res.output.strip().splitlines()[-1] == (
                f"error: {run / 'config.json'}: not confirmed: base_url = {attacker.url}; models = "
                "['openai:gpt-4o-mini']. Fix: pass them again (--base-url URL) or --trust-config after checking them"
            )
        assert attacker.stats()["requests"] == 0 and mine.stats()["requests"] == 0
        assert not (run / "responses.jsonl").exists()
        # the user names their own server (and confirms the folder's model): every call goes there
        res = runner.invoke(app, ["resume", str(run), "--yes", "--base-url", mine.url], input="y\n")
        assert res.exit_code == 0, res.output
        assert attacker.stats()["requests"] == 0
        assert mine.stats()["requests"] == 2  # one answer per item
        assert all(e["authorization"] == f"Bearer {FAKE_KEY}" for e in mine.log())
        assert (run / "report.md").is_file()
    assert snapshot(tmp_path, skip=run) == before


def test_base_url_confirmed_at_the_prompt_or_with_trust_config_is_used(tmp_path):
    with MockOpenAI(replies=["tesla"]) as theirs:
        bench = str(jsonl_benchmark(tmp_path))
        a = shipped_run(
            tmp_path / "runs" / "run-a", benchmarks=[bench], models=["openai:gpt-4o-mini"], base_url=theirs.url
        )
        res = runner.invoke(app, ["resume", str(a), "--yes"], input="y\n")
        assert res.exit_code == 0, res.output
        assert theirs.stats()["requests"] == 2
        b = shipped_run(
            tmp_path / "runs" / "run-b", benchmarks=[bench], models=["openai:gpt-4o-mini"], base_url=theirs.url + "/"
        )  # another server string: the earlier confirmation does not cover it
        res = runner.invoke(app, ["resume", str(b), "--yes"], input="")
        assert res.exit_code == 2 and theirs.stats()["requests"] == 2
        res = runner.invoke(app, ["resume", str(b), "--yes", "--trust-config"], input="")
        assert res.exit_code == 0, res.output
        assert "asks for settings" not in res.output
        assert theirs.stats()["requests"] == 4


@pytest.mark.parametrize(
    "settings,shown,flags,again",
    [
        (
            {"sandbox": "unsafe-local", "unsafe_local_exec": True},
            "unsafe_local_exec = True; sandbox = unsafe-local; models = ['openai:gpt-4o-mini']",
            "--unsafe-local-exec, --sandbox NAME",
            ["--sandbox", "auto", "--no-unsafe-local-exec"],
        ),
        (
            {"sandbox": "e2b"},
            "sandbox = e2b; models = ['openai:gpt-4o-mini']",
            "--sandbox NAME",
            ["--sandbox", "bubblewrap"],
        ),
        (
            {"judges": ["openai:gpt-4o-mini"], "tools": ["search", "python"]},
            "tools = ['search', 'python']; models = ['openai:gpt-4o-mini']; judges = ['openai:gpt-4o-mini']",
            "--tools LIST",
            ["--tools", ""],
        ),
    ],
)
def test_code_running_settings_from_config_json_need_confirmation(tmp_path, settings, shown, flags, again):
    with MockOpenAI(replies=["tesla"]) as mine:
        run = shipped_run(
            tmp_path / "runs" / "shared-run",
            benchmarks=[str(jsonl_benchmark(tmp_path))],
            models=["openai:gpt-4o-mini"],
            **settings,
        )
        before = snapshot(tmp_path, skip=run)
        res = runner.invoke(app, ["resume", str(run), "--yes", "--base-url", mine.url], input="n\n")
        assert res.exit_code == 2, res.output
        assert res.output.strip().splitlines()[-1] == (
            f"error: {run / 'config.json'}: not confirmed: {shown}. Fix: pass them again ({flags}) or --trust-config "
            "after checking them"
        )
        assert mine.stats()["requests"] == 0
        # given again, the settings are the user's; the folder's models are still confirmed at the prompt
        res = runner.invoke(app, ["resume", str(run), "--yes", "--base-url", mine.url, *again], input="y\n")
        assert res.exit_code == 0, res.output
        assert mine.stats()["requests"] >= 2
    assert snapshot(tmp_path, skip=run) == before


def test_own_runs_need_no_prompt(tmp_path):
    with MockOpenAI(replies=["tesla"]) as mine:
        res = ask_mock(mine.url, jsonl_benchmark(tmp_path), tmp_path / "runs")
        assert res.exit_code == 0, res.output
        (run,) = (tmp_path / "runs").iterdir()
        (run / "report.md").unlink()
        # the user's own run (started on this machine with these settings): no prompt
        res = runner.invoke(app, ["resume", str(run)], input="")
        assert res.exit_code == 0, res.output
        assert "asks for settings" not in res.output
        # the same folder with its base URL edited is someone else's choice again
        cfg = json.loads((run / "config.json").read_text())
        cfg["base_url"] = "http://127.0.0.1:9/v1"
        (run / "config.json").write_text(json.dumps(cfg))
        res = runner.invoke(app, ["resume", str(run)], input="")
        assert res.exit_code == 2 and "not confirmed: base_url = http://127.0.0.1:9/v1" in res.output


def test_symlinks_inside_a_run_folder_are_refused(tmp_path):
    out = tmp_path / "runs"
    res = runner.invoke(app, ["ask", CHEM, "--k", "3", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    target = tmp_path / "victim.txt"
    target.write_text("mine\n")
    for name in ("scores.jsonl", "report.md"):
        (run / name).unlink()
        (run / name).symlink_to(target)
    before = snapshot(tmp_path, skip=run)
    for cmd in (["resume", str(run), "--yes"], ["report", str(run)]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2, res.output
        assert res.output.strip() == (
            f"error: {run}: the run folder holds symbolic link(s) scores.jsonl, report.md: writing there could change "
            "files outside the run. Fix: replace each link by the file it points to (or remove it), then retry"
        )
    assert target.read_text() == "mine\n"
    assert snapshot(tmp_path, skip=run) == before


def test_renamed_and_symlinked_run_folders_are_the_ones_written(tmp_path):
    out = tmp_path / "runs"
    res = runner.invoke(app, ["ask", CHEM, "--k", "3", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (first,) = out.iterdir()
    report = (first / "report.md").read_text()
    renamed = first.rename(out / "renamed-run")
    link = tmp_path / "link-to-run"
    link.symlink_to(renamed)
    for given in (renamed, link, renamed / "report.md"):
        (renamed / "report.md").unlink()
        before = snapshot(tmp_path, skip=renamed)
        res = runner.invoke(app, ["report", str(given)])
        assert res.exit_code == 0, res.output
        assert (renamed / "report.md").read_text() == report
        assert snapshot(tmp_path, skip=renamed) == before  # no new folder next to it
        assert sorted(p.name for p in out.iterdir()) == ["renamed-run"]
    res = runner.invoke(app, ["resume", str(link), "--yes"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["renamed-run"]


def test_resume_of_a_renamed_unfinished_run_writes_the_folder_given(tmp_path):
    import asyncio

    from sgieval.graphs import evaluate as ev

    out = tmp_path / "runs"
    config = RunConfig(run_id="chem-run", request=CHEM, k=3, tools=[], out_dir=str(out))
    state = asyncio.run(ev.execute(ev.make_runtime(config)))  # no answer to the confirmation: stops there, folder kept
    assert "__interrupt__" in state and not (out / "chem-run" / "report.md").exists()
    renamed = (out / "chem-run").rename(out / "moved")
    link = tmp_path / "link-to-run"
    link.symlink_to(renamed)
    before = snapshot(tmp_path, skip=renamed)
    res = runner.invoke(app, ["resume", str(link), "--yes"])
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines()[-1].strip() == f"report: {link / 'report.md'}"
    assert len((renamed / "responses.jsonl").read_text().splitlines()) == 18  # 3 items x 6 stored models
    assert (renamed / "report.md").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["moved"]
    assert snapshot(tmp_path, skip=renamed) == before


@pytest.mark.parametrize("hostile,stem", [("../../../rigor", "rigor"), ("/etc/Rigor Check", "etc_rigor_check")])
async def test_rubric_name_from_a_user_yaml_is_slugged_before_it_becomes_a_path(tmp_path, monkeypatch, hostile, stem):
    from sgieval.agents import run as agent_steps
    from sgieval.agents.customisation import MetricPlan
    from sgieval.graphs import evaluate as ev
    from sgieval.metric_pool.rubrics import load_rubric

    user_yaml = tmp_path / "user-rubrics" / "mine.yaml"
    user_yaml.parent.mkdir()
    user_yaml.write_text(load_rubric("rigor").to_yaml().replace("name: rigor", f"name: {hostile}", 1))
    rubric = Rubric.from_yaml(user_yaml)
    assert rubric.name == hostile

    async def customisation(request, items, **kw):
        return MetricPlan(predefined=["exact_match"], custom=[rubric], primary="exact_match", reason="test"), [], []

    monkeypatch.setattr(agent_steps, "run_customisation", customisation)
    out = tmp_path / "deep" / "er" / "runs"
    out.mkdir(parents=True)
    bench = jsonl_benchmark(tmp_path)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"item_id": f"jsonl:qa/{i}", "model": "m", "text": t}) + "\n"
            for i, t in (("q1", "tesla"), ("q2", "Au"))
        )
    )
    config = RunConfig(
        run_id="rubric-run", benchmarks=[str(bench)], models=[f"replay:{answers}"], yes=True, tools=[], out_dir=str(out)
    )
    before = snapshot(tmp_path, skip=out / "rubric-run")
    state = await ev.execute(ev.make_runtime(config))
    assert state.get("report")
    assert sorted(p.name for p in (out / "rubric-run" / "rubrics").iterdir()) == [f"{stem}.yaml"]
    assert RunStore(out / "rubric-run").rubric_path(hostile) == out / "rubric-run" / "rubrics" / f"{stem}.yaml"
    assert snapshot(tmp_path, skip=out / "rubric-run") == before


def test_report_and_view_ask_before_the_agent_model_uses_the_folders_base_url(tmp_path):
    out = tmp_path / "runs"
    res = runner.invoke(app, ["ask", CHEM, "--k", "2", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    with MockOpenAI(replies=["A short narrative."]) as attacker, MockOpenAI(replies=["A short narrative."]) as mine:
        cfg = json.loads((run / "config.json").read_text())
        cfg.update(agent_model="openai:gpt-4o-mini", base_url=attacker.url)
        (run / "config.json").write_text(json.dumps(cfg))
        (run / "report.json").unlink()
        before = snapshot(tmp_path, skip=run)
        for cmd in (["report", str(run)], ["view", str(run)]):
            res = runner.invoke(app, cmd, input="")
            assert res.exit_code == 2, res.output
            assert res.output.strip().splitlines()[-1] == (
                f"error: {run / 'config.json'}: not confirmed: base_url = {attacker.url}; agent_model = "
                "openai:gpt-4o-mini. Fix: pass them again (--base-url URL) or --trust-config after checking them"
            )
        res = runner.invoke(app, ["report", str(run), "--base-url", mine.url], input="y\n")  # "y": the agent model
        assert res.exit_code == 0, res.output
        assert attacker.stats()["requests"] == 0 and mine.stats()["requests"] >= 1
        assert all(e["authorization"] == f"Bearer {FAKE_KEY}" for e in mine.log())
    assert snapshot(tmp_path, skip=run) == before
