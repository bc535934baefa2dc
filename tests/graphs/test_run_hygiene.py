"""Run-folder hygiene: unique run ids, one run per folder, duplicate models merged,
no silent empty runs, and a ledger journal that survives a restart."""

from __future__ import annotations

import asyncio
import re

import pytest

from sgieval.core import InputError, RunConfig, RunStore
from sgieval.graphs.evaluate import load_ledger, execute, make_runtime, new_run_id


def test_run_ids_differ_within_one_second():
    ids = {new_run_id("Which model is most creative?") for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"\d{8}-\d{6}-which-model-is-most-creative-[0-9a-f]{8}", i) for i in ids)


def test_a_new_run_never_reuses_a_folder(tmp_path, sciaidan_dir):
    cfg = RunConfig(
        run_id="same",
        request="creative in chemistry",
        k=2,
        data_dir=str(sciaidan_dir.parent),
        out_dir=str(tmp_path),
        yes=True,
        models=["replay:phi4"],
        bootstrap_resamples=99,
    )
    asyncio.run(execute(make_runtime(cfg)))
    first = (tmp_path / "same" / "responses.jsonl").read_text()
    other = cfg.model_copy(update={"models": ["replay:o1-mini"]})
    with pytest.raises(InputError) as ei:
        asyncio.run(execute(make_runtime(other)))
    assert (
        "already holds a run" in ei.value.one_line() and f"`sgieval resume {tmp_path / 'same'}`" in ei.value.one_line()
    )
    # the first run is untouched
    assert (tmp_path / "same" / "responses.jsonl").read_text() == first
    assert RunStore(tmp_path / "same").read_config().models == ["replay:phi4"]


def test_duplicate_model_strings_are_one_target(tmp_path, sciaidan_dir):
    cfg = RunConfig(
        run_id="d",
        request="creative in chemistry",
        k=2,
        data_dir=str(sciaidan_dir.parent),
        out_dir=str(tmp_path),
        yes=True,
        models=["replay:phi4", "replay:phi4:latest", "replay:o1-mini"],
        bootstrap_resamples=99,
    )
    rt = make_runtime(cfg)
    assert [t.name for t in rt.targets] == ["replay:phi4:latest", "replay:o1-mini"]
    asyncio.run(execute(rt))
    # 2 items x 2 distinct targets
    assert sorted({r.model for r in rt.store.read("responses")}) == ["replay:o1-mini", "replay:phi4:latest"]
    assert len(rt.store.read("responses")) == 4
    ranking = (tmp_path / "d" / "report.md").read_text().split("## Ranking", 1)[1].split("\n\n## ", 1)[0]
    assert len(re.findall(r"^\| \d \| replay:", ranking, flags=re.M)) == 2


def test_no_stored_models_and_no_models_is_an_input_error(tmp_path, sciaidan_dir):
    data = tmp_path / "data" / "sciaidanbench"
    data.mkdir(parents=True)
    (data / "questions.json").write_text((sciaidan_dir / "questions.json").read_text())
    cfg = RunConfig(
        run_id="n",
        request="creative in chemistry",
        k=2,
        data_dir=str(tmp_path / "data"),
        out_dir=str(tmp_path / "runs"),
        yes=True,
    )
    with pytest.raises(InputError) as ei:
        asyncio.run(execute(make_runtime(cfg)))
    assert "no stored SciAidanBench responses found" in ei.value.one_line()
    assert not (tmp_path / "runs" / "n").exists()  # nothing computed: no run folder left


def test_ledger_journal_is_reloaded(tmp_path):
    cfg = RunConfig(run_id="l", out_dir=str(tmp_path))
    rt = make_runtime(cfg, catalog=object(), targets=[], judges=[])  # the ledger needs only the store
    led = load_ledger(rt)
    led.record("openai:m", "target", usage={"input": 10, "output": 2}, latency_s=0.5)
    led.record("openai:j", "judge", error="HTTP 500")
    led.merge(
        [
            {
                "model": "openai:m",
                "role": "target",
                "input_tokens": 1,
                "output_tokens": 1,
                "latency_s": 0.1,
                "cost": None,
                "cached": False,
                "error": None,
            }
        ]
    )
    # a new process (resume) sees the three calls
    again = load_ledger(make_runtime(cfg, catalog=object(), targets=[], judges=[]))
    t = again.totals()
    assert (t[("openai:m", "target")].calls, t[("openai:m", "target")].input_tokens) == (2, 11)
    assert (t[("openai:j", "judge")].calls, t[("openai:j", "judge")].failed_calls) == (1, 1)
    assert len(RunStore(tmp_path / "l").read_rows("ledger")) == 3


def test_models_named_in_the_request():
    from sgieval.graphs.evaluate import models_named_in

    stored = ["o1-mini", "openai/4o", "phi4:latest", "llama3.3:latest", "qwen2.5:latest", "mistral:latest"]
    assert models_named_in("Is o1-mini more creative than mistral in physics?", stored) == ["o1-mini", "mistral:latest"]
    assert models_named_in("Compare Llama3.3, Qwen2.5.", stored) == ["llama3.3:latest", "qwen2.5:latest"]
    assert models_named_in("How does GPT-4o do?", stored) == ["openai/4o"]
    assert models_named_in("phi4.5 or llama3.30 or phi45", stored) == []
    assert models_named_in("Compare phi4 and llama; is 4o ahead of qwen?", stored) == [
        "openai/4o",
        "phi4:latest",
        "llama3.3:latest",
        "qwen2.5:latest",
    ]
    assert models_named_in("Which model is the most creative in chemistry?", stored) == []


def test_request_naming_two_stored_models_evaluates_those_two(tmp_path, sciaidan_dir):
    cfg = RunConfig(
        run_id="two",
        request="Is o1-mini more creative than mistral in chemistry?",
        k=3,
        data_dir=str(sciaidan_dir.parent),
        out_dir=str(tmp_path),
        yes=True,
        bootstrap_resamples=99,
    )
    rt = make_runtime(cfg)
    state = asyncio.run(execute(rt))
    assert sorted(state["targets"]) == ["replay:mistral:latest", "replay:o1-mini"]
    assert {r.model for r in rt.store.read("responses")} == {"replay:o1-mini", "replay:mistral:latest"}
    report = (tmp_path / "two" / "report.md").read_text()
    assert (
        f"Target models are the stored models the request names ({', '.join(state['targets'])}); "
        "pass --models to evaluate others."
    ) in report


def test_live_target_on_sciaidanbench_without_a_judge_stops_before_any_call(tmp_path, sciaidan_dir):
    from sgieval.bench.mock_openai import MockOpenAI

    with MockOpenAI() as mock:
        for judges, expected in (
            (
                [],
                "the open-creativity protocol needs a judge: no judge configured (pass "
                "--judge). Fix: pass --judge <model>",
            ),
            (["openai:m1"], "are the target model openai:m1. Fix: pass another --judge or --allow-self-judge"),
        ):
            cfg = RunConfig(
                run_id=f"j{len(judges)}",
                request="creative in chemistry",
                k=2,
                base_url=mock.url,
                data_dir=str(sciaidan_dir.parent),
                out_dir=str(tmp_path),
                yes=True,
                models=["openai:m1"],
                judges=judges,
            )
            with pytest.raises(InputError) as ei:
                asyncio.run(execute(make_runtime(cfg)))
            assert expected in ei.value.one_line()
            assert not (tmp_path / cfg.run_id).exists()
        assert mock.stats()["requests"] == 0
