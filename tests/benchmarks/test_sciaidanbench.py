"""SciAidanBench loader and replay on the real shared data (DATASETS.md; METRICS.md B.6-B.7)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sgieval.benchmarks import load_catalog
from sgieval.benchmarks.sciaidanbench import load_questions, load_stored_answers
from sgieval.core import InputError
from sgieval.agents.stored_responses import resolve_run_model as resolve_model
from sgieval.agents.stored_responses import stored_models


def test_questions_published_and_all(sciaidan_dir):
    items = load_questions(sciaidan_dir)
    assert len(items) == 155
    assert len(load_questions(sciaidan_dir, published_only=False)) == 157
    counts = Counter(i.discipline for i in items)
    # DATASETS.md: Physics 27+13+7+12 = 59 minus the 2 unpublished Synchrotron questions = 57
    assert counts == {
        "Physics": 57,
        "Nanoscience": 32,
        "Chemistry": 25,
        "Biology": 20,
        "Environmental Science": 16,
        "Neuroscience": 5,
    }
    chem = [i for i in items if i.discipline == "Chemistry"]
    assert chem[0].id == "sciaidanbench/chemistry/0" and chem[0].direction == "Chemistry"
    astro = [i for i in items if i.direction == "Astrophysics"]
    assert len(astro) == 13 and astro[0].id.startswith("sciaidanbench/physics-astrophysics/")
    assert {i.task for i in items} == {"open_creativity"}


def test_stored_models_and_records_kept(sciaidan_dir):
    names = sorted(s.model for s in stored_models())
    assert names == ["llama3.3:latest", "mistral:latest", "o1-mini", "openai/4o", "phi4:latest", "qwen2.5:latest"]
    target = resolve_model("replay:openai/4o", "target")
    item = load_questions(sciaidan_dir)[0]
    resp = target.replay.respond(item, target.name)
    recs = resp.metadata["records"]
    # every stored record is kept: the accepted ones and the final rejected one, with stored judge scores
    assert recs[-1]["stopping_condition"] is not None and "final_stopping_condition" in recs[-1]
    assert all(r["stopping_condition"] is None for r in recs[:-1])
    assert resp.answer == [r["answer"] for r in recs[:-1]]
    assert "coherence_score" in recs[0] and recs[0]["embedding_dissimilarity_score"] == 1.0


def test_replay_name_forms():
    assert resolve_model("replay:phi4", "target").name == "replay:phi4:latest"
    assert resolve_model("replay:phi4_latest", "target").name == "replay:phi4:latest"
    assert resolve_model("replay:openai_4o", "target").name == "replay:openai/4o"
    with pytest.raises(InputError, match="no stored responses named 'gpt-9'.*o1-mini"):
        resolve_model("replay:gpt-9", "target")
    with pytest.raises(InputError, match="replay models can only be target models"):
        resolve_model("replay:o1-mini", "judge")


def test_replay_missing_item_is_failed_response(tmp_path, sciaidan_dir):
    item = load_questions(sciaidan_dir)[0].model_copy(
        update={"id": "x/1", "prompt": "unknown question?", "metadata": {"question": "unknown question?"}}
    )
    m = resolve_model("replay:o1-mini", "target")
    r = m.replay.respond(item, m.name)
    assert r.status == "not_run" and r.text == ""
    assert "replay:o1-mini has no stored response for item x/1" in r.error


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "invalid JSON at line 1"),
        (json.dumps({"results": {}}), "top level must be an object with a 'domains' object"),
        (
            json.dumps({"domains": {"Chemistry": {"nomodels": {}}}}),
            "domains.Chemistry.nomodels lacks a 'models' object",
        ),
        (
            json.dumps({"domains": {"Chemistry": {"models": {"m": {"0.7": {"Q?": [{"answer_num": 1}]}}}}}}),
            "record 0 of domains.Chemistry.models.m.0.7['Q?'] lacks field 'answer'",
        ),
        (
            json.dumps({"domains": {"Chemistry": {"models": {"m": {"0.7": {"Q?": "text"}}}}}}),
            "must be a list of records",
        ),
    ],
)
def test_malformed_responses_file(tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(InputError) as e:
        load_stored_answers(p)
    assert message in str(e.value) and str(p) in str(e.value) and "Fix:" in str(e.value)


def test_catalog_facets_and_sampling(sciaidan_dir):
    cat = load_catalog(["sciaidanbench"])
    assert cat.counts("task") == {"open_creativity": 155}
    assert len(cat.filter({"discipline": ["chemistry"]})) == 25  # case-insensitive
    phys = cat.filter({"discipline": ["Physics"]})
    a = cat.sample(phys, 10, seed=1)
    assert [i.id for i in a] == [i.id for i in cat.sample(phys, 10, seed=1)]  # deterministic for a seed
    # stratified by discipline: 10 of (Physics 57) from one stratum; over all 155 with k=31 each discipline
    # gets round(31 * n/155): Physics 11.4, Nano 6.4, Chem 5, Bio 4, Env 3.2, Neuro 1 -> 11+6+5+4+3+1 = 30, +1 to Physics (.4 > .4 tie by name)
    s = cat.sample(cat.items, 31, seed=0)
    c = Counter(i.discipline for i in s)
    assert sum(c.values()) == 31 and c["Chemistry"] == 5 and c["Biology"] == 4 and c["Neuroscience"] == 1
    hits = cat.search("polymer bandgap")
    assert hits and "bandgap" in hits[0].prompt.lower()


def test_explicit_data_dir_with_an_empty_benchmark_folder_does_not_fall_back(tmp_path, sciaidan_dir):
    from sgieval.benchmarks.data import find_benchmark_dir
    from sgieval.core import DataNotFoundError

    (tmp_path / "sciaidanbench").mkdir()
    with pytest.raises(DataNotFoundError) as ei:
        find_benchmark_dir("sciaidanbench", tmp_path)
    assert ei.value.one_line().startswith(
        f"--data-dir {tmp_path}: {tmp_path / 'sciaidanbench'} holds no sciaidanbench data (expected questions.json; "
        "found: nothing (an empty folder))"
    )
    # a named data folder without a sciaidanbench/ folder is the only place looked in: never the shared data
    other = tmp_path / "other"
    other.mkdir()
    assert find_benchmark_dir("sciaidanbench", other, required=False) is None
    with pytest.raises(DataNotFoundError, match="found: nothing \\(an empty folder\\)"):
        find_benchmark_dir("sciaidanbench", other)
    assert find_benchmark_dir("sciaidanbench") == sciaidan_dir  # no folder named: the default roots


# ----------------------------------------- Every stored list is kept (METRICS.md B.6)
def _rec(n, stop=None):
    return {
        "answer_num": n,
        "answer": f"a{n}",
        "coherence_score": 80,
        "embedding_dissimilarity_score": 0.5,
        "stopping_condition": stop,
    }


def _lists(k_accepted):
    """A stored list: k accepted answers, then the rejected terminating one."""
    return [_rec(i + 1) for i in range(k_accepted)] + [_rec(k_accepted + 1, "coherence_threshold")]


async def test_same_question_under_two_temperatures_and_subdomains_is_never_overwritten(tmp_path):
    from sgieval.core import Item
    from sgieval.metric_pool.aidanbench import AnswerCountMetrics
    from sgieval.metric_pool.base import ScoringContext
    from sgieval.models.replay import ReplayStore

    q = "Name a catalyst."
    data = {
        "domains": {
            "Chemistry": {"models": {"m": {"0.7": {q: _lists(3)}, "1.0": {q: _lists(2)}}}},
            "Physics": {"Optics": {"models": {"m": {"0.7": {q: _lists(5)}}}}},
        }
    }
    p = tmp_path / "m.json"
    p.write_text(json.dumps(data))
    (sa,) = load_stored_answers(p)
    entry = sa.by_question[q]
    assert [(lst["domain"], lst["subdomain"], lst["temperature"], len(lst["records"])) for lst in entry["lists"]] == [
        ("Chemistry", "Chemistry", "0.7", 4),
        ("Chemistry", "Chemistry", "1.0", 3),
        ("Physics", "Optics", "0.7", 6),
    ]
    store = ReplayStore(model="m", source=p, by_question=sa.by_question)

    async def counts(discipline, direction):
        it = Item(
            id=f"x/{direction}",
            benchmark="sciaidanbench",
            task="open_creativity",
            discipline=discipline,
            direction=direction,
            prompt=q,
            metadata={"question": q},
        )
        resp = store.respond(it, "replay:m")
        got = {s.metric: s.value for s in await AnswerCountMetrics().score(it, resp, ScoringContext())}
        return resp, got

    # chemistry: both temperatures, summed (B.6 total_responses sums over temperatures)
    chem, got = await counts("Chemistry", "Chemistry")
    assert (got["aidan_accepted_answers"], got["aidan_published_count"]) == (5.0, 7.0)
    assert chem.metadata["temperature"] == "0.7,1.0"
    assert [(x["temperature"], x["start"], x["n"]) for x in chem.metadata["lists"]] == [("0.7", 0, 4), ("1.0", 4, 3)]
    # the same question under Physics/Optics is its own list
    _, got = await counts("Physics", "Optics")
    assert (got["aidan_accepted_answers"], got["aidan_published_count"]) == (5.0, 6.0)


def test_real_stored_files_hold_one_list_per_question(sciaidan_dir):
    # the published files have no repeated question, so the chemistry ranking 296/274/200/194/180/107 is unchanged
    for f in sorted((sciaidan_dir / "responses").glob("*.json")):
        (sa,) = load_stored_answers(f)
        assert len(sa.by_question) == 155 and all(len(e["lists"]) == 1 for e in sa.by_question.values())


def test_replay_file_with_two_models_or_two_lines_for_one_item(tmp_path):
    from sgieval.models.replay import load_jsonl_replay
    from sgieval.agents.stored_responses import stored_responses
    from sgieval.models.registry import resolve_replay

    two = tmp_path / "two.jsonl"
    two.write_text(
        '{"item_id": "a", "text": "x", "model": "m1"}\n{"item_id": "b", "text": "y", "model": "m1"}\n'
        '{"item_id": "a", "text": "z", "model": "m2"}\n'
    )
    with pytest.raises(
        InputError,
        match=r"line 3: model 'm2', but line 1 is model 'm1'; a replay file holds the "
        r"replies of one model\. Fix: split the file by model",
    ):
        load_jsonl_replay(two)
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"item_id": "a", "text": "x"}\n\n{"item_id": "b", "text": "y"}\n{"item_id": "a", "text": "z"}\n')
    with pytest.raises(
        InputError,
        match=r"dup.jsonl: line 4: a second reply for item 'a' of model 'dup' \(the first "
        r"is on line 1\)",
    ):
        load_jsonl_replay(dup)
    # a model field on some lines only: the file stem for the others is another model
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"item_id": "a", "text": "x"}\n{"item_id": "b", "text": "y", "model": "other"}\n')
    with pytest.raises(InputError, match="line 2: model 'other', but line 1 is model 'mixed'"):
        load_jsonl_replay(mixed)
    # a SciAidanBench file with two models: the names are shown
    both = tmp_path / "both.json"
    both.write_text(
        json.dumps(
            {"domains": {"Chemistry": {"models": {"m1": {"0.7": {"Q?": _lists(1)}}, "m2": {"0.7": {"Q?": _lists(1)}}}}}}
        )
    )
    with pytest.raises(InputError, match=r"holds the answers of 2 models \(m1, m2\)"):
        resolve_replay(f"replay:{both}", stored_responses())
    # models/ reads no benchmark's files: without the reader the .json file is refused, with the fix
    with pytest.raises(InputError, match=r"no reader for stored-answer \.json files was given.*resolve_run_model"):
        resolve_replay(f"replay:{both}")
