"""Every judge prompt is stored as the provider received it, a parse retry's included: a judge reply that does not
parse is asked again with the earlier reply and the parse error appended, so each attempt sends a prompt of its own
(2, 4, 6 messages); ``prompts.jsonl`` keeps each by its hash and the reply's evidence names the prompt of every
attempt (``prompt_hashes``, one per raw reply), the first attempt's staying ``prompt_hash``.

The judge is sgieval's OpenAI-compatible chat model on the project's mock server (bench/mock_openai.py), which keeps
every request body; the run goes through the real graph with replayed target answers."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import RunConfig, prompt_hash
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.base import NamedModel
from sgieval.models.openai_direct import ChatOpenAIDirect

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


def judge_reply(body: dict[str, Any], index: int) -> str:
    """Never a verdict for the answer "Muddled.", 5 on every criterion for any other answer."""
    msgs = body["messages"]
    if "Muddled." in str(msgs[1]["content"]):
        return "I cannot decide."
    text = "\n".join(str(m.get("content")) for m in msgs)
    names = re.findall(r"^- (.+?) \(weight [^)]*\):", text, flags=re.MULTILINE)
    return json.dumps({"scores": [{"criterion": n, "score": 5, "rationale": "fair"} for n in names]})


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_every_attempt_of_a_judge_call_stores_its_prompt(tmp_path):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"id": "q0", "prompt": "Propose a method to measure a slow reaction rate."}) + "\n")
    models = []
    for name, text in {"muddled": "Muddled.", "clear": "A clear method with controls."}.items():
        f = tmp_path / f"{name}.jsonl"
        f.write_text(json.dumps({"item_id": "jsonl:bench/q0", "text": text}) + "\n")
        models.append(f"replay:{f}")
    cfg = RunConfig(
        run_id="retryprompts",
        request="Which model is the most rigorous?",
        benchmarks=[str(bench)],
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=99,
        models=models,
        judges=["openai:mock-judge"],
        metric="rigor",
        tools=[],
        use_cache=False,
    )
    with MockOpenAI(replies=judge_reply, log_bodies=True) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="mock-judge", max_retries=0, temperature=0)
        judge = NamedModel(name="openai:mock-judge", role="judge", chat=chat, provider="mock")
        state = asyncio.run(execute(make_runtime(cfg, judges=[judge])))
        bodies = [json.loads(e["body"]) for e in mock.log()]
    run = Path(state["report"]).parent
    scores = {s["model"].removeprefix("replay:"): s for s in _lines(run / "scores.jsonl") if s["metric"] == "rigor"}
    assert {m: (s["value"], s["status"]) for m, s in scores.items()} == {
        "muddled": (None, "judge_error"),
        "clear": (50.0, "ok"),
    }
    muddled = [b for b in bodies if "Muddled." in str(b["messages"][1]["content"])]
    assert [len(b["messages"]) for b in muddled] == [2, 4, 6]  # the prompt, then each retry
    assert [m["role"] for m in muddled[2]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    prompts = {p["hash"]: p for p in _lines(run / "prompts.jsonl")}
    assert len(prompts) == 4  # muddled's three attempts and clear's one
    (ev,) = [e for e in scores["muddled"]["evidence"] if e["kind"] == "judge_reply"]
    assert ev["attempts"] == 3 and ev["raw"] == ["I cannot decide."] * 3
    assert len(ev["prompt_hashes"]) == 3 and len(set(ev["prompt_hashes"])) == 3
    assert ev["prompt_hash"] == ev["prompt_hashes"][0]
    for h, sent in zip(ev["prompt_hashes"], muddled):
        p = prompts[h]
        # stored as the provider received it: the request body's messages and format, hashed over both
        assert p["messages"] == sent["messages"]
        assert p["response_format"] == sent["response_format"]
        assert h == prompt_hash(p["messages"], p["response_format"])
    third = prompts[ev["prompt_hashes"][2]]["messages"]
    assert third[4] == {"role": "assistant", "content": "I cannot decide."}
    assert third[5]["content"].startswith("Your reply could not be parsed: no JSON object found in the reply")
    (ok,) = [e for e in scores["clear"]["evidence"] if e["kind"] == "judge_reply"]
    assert ok["attempts"] == 1 and ok["prompt_hashes"] == [ok["prompt_hash"]] and ok["prompt_hash"] in prompts
    # the viewer's text file carries every attempt's prompt
    assert CliRunner().invoke(app, ["view", str(run)]).exit_code == 0
    texts = json.loads((run / "viewer" / "text.js").read_text().removeprefix("window.SGV_TEXT = ").rstrip(";\n"))
    assert set(texts["prompts"]) == set(prompts)
