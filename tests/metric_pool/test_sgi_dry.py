"""SGI-Bench Dry Experiment (METRICS.md A.3): assembly, pass rules, PassAll@k, SER, AET."""

import json
import math

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from sgieval.core import Item, Response
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi import dry_experiment as de
from sgieval.models.base import NamedModel
from sgieval.tools.base import ExecResult

# ------------------------------------------------------------------ assembly
MAIN = "import os\n\ndef f():\n    return 0\n\ndef g():\n    return f()\n\nprint(g())\n"


def test_replace_function_basic_and_missing_newline():
    # answer's last line has no newline (stripped answer): sgieval adds one so "\n\ndef g" stays separate
    out = de.replace_function(MAIN, "def f():\n    return 42", "f")
    assert out == "import os\n\ndef f():\n    return 42\n\ndef g():\n    return f()\n\nprint(g())\n"


def test_assemble_drops_decorators_helpers_imports():
    answer = "<answer>\nimport json\n\n@cache\ndef f():\n    return 1\n\ndef helper():\n    pass\n</answer>"
    code, report = de.assemble(MAIN, answer, ["f"])
    assert code == "import os\n\ndef f():\n    return 1\n\ndef g():\n    return f()\n\nprint(g())\n"
    assert report == {"f": "answer"}


def test_assemble_duplicate_names_last_wins_and_order():
    answer = "def f():\n    return 1\n\ndef f():\n    return 2\n\ndef g():\n    return f() + 1\n"
    code, report = de.assemble(MAIN, answer, ["f", "g"])
    assert code == "import os\n\ndef f():\n    return 2\n\ndef g():\n    return f() + 1\n\nprint(g())\n"
    assert report == {"f": "answer", "g": "answer"}


def test_assemble_uncompilable_or_async_leaves_function_unchanged():
    code, report = de.assemble(MAIN, "def f(:\n    return 1\n", ["f"])
    assert code == MAIN and report == {"f": "unchanged: answer code does not compile"}
    code, report = de.assemble(MAIN, "async def f():\n    return 1\n", ["f"])
    assert code == MAIN and report == {"f": "unchanged: \"function 'f' not in the answer\""}


def test_assemble_fenced_fallback():
    # the tagged answer holds a fenced block: it does not compile as a whole, the fenced code does
    answer = "Sure!\n<answer>\n```python\ndef f():\n    return 7\n```\n</answer>"
    code, report = de.assemble(MAIN, answer, ["f"])
    assert "    return 7\n" in code and report == {"f": "fenced"}


def test_aggregate_aet_conventions():
    # step_4: mean of values > 0 = (2 + 4)/2 = 3; sgi_score: (2 - 1 + 4)/3 = 5/3
    assert de.aggregate_aet([2.0, -1.0, 4.0], "step4") == pytest.approx(3.0)
    assert de.aggregate_aet([2.0, -1.0, 4.0], "sgi_score") == pytest.approx(5 / 3)
    assert math.isnan(de.aggregate_aet([-1.0], "step4"))
    with pytest.raises(ValueError, match="unknown AET convention 'x'"):
        de.aggregate_aet([1.0], "x")


# ------------------------------------------------------------------ scoring with a scripted sandbox
class ScriptedSandbox:
    """Returns a fixed ExecResult per unit test (keyed by the data script text)."""

    name = "scripted"

    def __init__(self, results: dict[str, ExecResult]):
        self.results = results
        self.calls = []

    def run(self, code, *, files=None, setup_scripts=None, timeout_s=60.0, output_files=None):
        self.calls.append((code, dict(files), list(setup_scripts), timeout_s))
        return self.results[files["data_en.py"]]


def dry_item(outputs: list[str], main: str = MAIN, functions=("f",)) -> Item:
    return Item(
        id="sgi-bench/SGI_DryExperiment_0000",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={
            "data_code": "",
            "main_code": "",
            "incomplete_main_code": main,
            "incomplete_functions": list(functions),
            "unit_tests": [{"data": f"d{i}", "output": o} for i, o in enumerate(outputs)],
            "runtime": None,
        },
    )


async def test_scores_with_scripted_sandbox_hand_values():
    results = {
        "d0": ExecResult(stdout="42\n", exit_code=0, wall_time_s=1.0),  # exact "42" -> pass
        "d1": ExecResult(stdout="41", exit_code=0, wall_time_s=2.0),  # differs, rc 0, no judge -> fail
        "d2": ExecResult(stdout="", exit_code=-9, wall_time_s=5.0, timed_out=True),  # timeout -> runtime 300, rc -1
        "d3": ExecResult(stderr="launch failed", exit_code=None),  # launch failure -> runtime -1, rc 1
        "d4": ExecResult(stderr="Traceback", exit_code=1, wall_time_s=3.0),  # rc 1 -> fail
    }
    sb = ScriptedSandbox(results)
    item = dry_item(["42", "42", "42", "42", "42"])
    resp = Response(item_id=item.id, model="t", text="<answer>def f():\n    return 42</answer>")
    scores = {s.metric: s for s in await de.DryExperimentMetric().score(item, resp, ScoringContext(sandbox=sb))}
    # p = 1 -> PassAll@1 = 1, @3 = 0, @5 = 0; SER = 2/5 (d0, d1 exit 0);
    # AET = mean of runtimes > 0 = (1 + 2 + 300 + 3)/4 = 76.5
    assert [scores[n].value for n in ("dry_passall_1", "dry_passall_3", "dry_passall_5")] == [1.0, 0.0, 0.0]
    assert scores["dry_smooth_execution_rate"].value == pytest.approx(0.4)
    assert scores["dry_average_execution_time"].value == pytest.approx(76.5)
    assert "#1 fail (output differs; judge not run (no judge configured))" in scores["dry_passall_5"].rationale
    code, files, setup, timeout = sb.calls[0]
    assert "    return 42\n" in code and setup == ["data_en.py"] and timeout == 300.0


async def test_judge_decides_non_exact_output():
    results = {
        f"d{i}": ExecResult(stderr="UserWarning: x", stdout="loss 0.101", exit_code=0, wall_time_s=1.0)
        for i in range(5)
    }
    # each unit test needs the judge (stderr breaks exact match); scripted verdicts: 4 correct, 1 "incorrect"
    # -> p = 4: PassAll@3 = 1, PassAll@5 = 0
    replies = ['{"judgment": "correct", "reason": "within 2%"}'] * 4 + ['{"judgment": "incorrect", "reason": "5%"}']
    judge = NamedModel(
        name="o4-mini", role="judge", chat=GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in replies))
    )
    ctx = ScoringContext(sandbox=ScriptedSandbox(results), judges=[judge])
    item = dry_item(["loss 0.1"] * 5)
    scores = {
        s.metric: s
        for s in await de.DryExperimentMetric({"dry_parallel_tests": False}).score(
            item, Response(item_id=item.id, model="t", text="def f():\n    return 1\n"), ctx
        )
    }
    assert [scores[n].value for n in ("dry_passall_1", "dry_passall_3", "dry_passall_5")] == [1.0, 1.0, 0.0]
    assert scores["dry_passall_5"].judge == "o4-mini"
    assert sum(1 for e in scores["dry_passall_5"].evidence if e.kind == "judge_reply") == 5


async def test_judge_unparsable_is_judge_error_for_passall_only():
    results = {f"d{i}": ExecResult(stdout="x", exit_code=0, wall_time_s=1.0) for i in range(5)}
    judge = NamedModel(
        name="j", role="judge", chat=GenericFakeChatModel(messages=iter([AIMessage(content="no json")] * 40))
    )
    ctx = ScoringContext(sandbox=ScriptedSandbox(results), judges=[judge])
    item = dry_item(["y"] * 5)
    scores = {
        s.metric: s
        for s in await de.DryExperimentMetric().score(
            item, Response(item_id=item.id, model="t", text="def f():\n    return 1\n"), ctx
        )
    }
    assert scores["dry_passall_5"].status == "judge_error"
    assert scores["dry_smooth_execution_rate"].value == 1.0 and scores["dry_average_execution_time"].value == 1.0


async def test_no_sandbox_empty_response_bad_reference():
    item = dry_item(["1"] * 5)
    m = de.DryExperimentMetric()
    scores = await m.score(item, Response(item_id=item.id, model="t", text="def f(): pass"), ScoringContext())
    assert {s.status for s in scores} == {"infra_error"}
    assert scores[0].error.startswith("no sandbox configured")
    # empty / "none" response: no program, p = 0, SER 0, AET -1 (no sandbox needed)
    scores = {
        s.metric: s for s in await m.score(item, Response(item_id=item.id, model="t", text="None"), ScoringContext())
    }
    assert scores["dry_passall_1"].value == 0.0 and scores["dry_smooth_execution_rate"].value == 0.0
    assert scores["dry_average_execution_time"].value == -1.0
    bad = Item(
        id="sgi-bench/x",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={"incomplete_main_code": "", "incomplete_functions": [], "unit_tests": [{"data": "", "output": ""}]},
    )
    scores = await m.score(bad, Response(item_id="x", model="t", text="x"), ScoringContext())
    assert scores[0].status == "input_error"
    assert "must be 5 objects with string 'data' and 'output'" in scores[0].error


# ------------------------------------------------------------------ a real run (subprocess fallback)
REAL_MAIN = '''import json
import sys


def compute(x):
    pass


def main():
    with open("input.json") as fh:
        x = json.load(fh)["x"]
    print(compute(x))


if __name__ == "__main__":
    main()
'''

REAL_ANSWER = '''Here is the completed function.
<answer>
```python
import time  # dropped by the assembly (only the def lines are used)

@some_decorator
def compute(x):
    if x == "sleep":
        import time
        time.sleep(60)
    if x < 0:
        sys.stderr.write("warning: negative\\n")
    if x == 0:
        raise ZeroDivisionError("zero")
    return x * x
```
</answer>'''


def real_item() -> Item:
    xs = [2, 3, -1, "sleep", 0]
    outs = ["4", "9", "1", "never printed", "0"]
    tests = [
        {"data": f"import json\njson.dump({{'x': {json.dumps(x)}}}, open('input.json', 'w'))\n", "output": o}
        for x, o in zip(xs, outs)
    ]
    return Item(
        id="sgi-bench/real",
        benchmark="sgi-bench",
        task="dry_experiment",
        prompt="p",
        reference={
            "data_code": "",
            "main_code": "",
            "incomplete_main_code": REAL_MAIN,
            "incomplete_functions": ["compute"],
            "unit_tests": tests,
            "runtime": None,
        },
    )


async def test_real_run_subprocess_fallback():
    # tests: x=2 -> "4" exact pass; x=3 -> "9" pass; x=-1 -> "warning: negative\n\n1" (stderr first) != "1",
    # rc 0, no judge -> fail; "sleep" -> timeout (2 s) -> fail, rc -1; x=0 -> ZeroDivisionError rc 1 -> fail.
    # p = 2: PassAll@1 = 1, @3 = 0, @5 = 0; SER = 3/5; AET > 0 (includes the 2 s timeout: AET >= 2/5)
    m = de.DryExperimentMetric({"unsafe_local_exec": True, "dry_timeout_s": 2.0})
    item = real_item()
    scores = {
        s.metric: s
        for s in await m.score(item, Response(item_id=item.id, model="t", text=REAL_ANSWER), ScoringContext())
    }
    assert [scores[n].value for n in ("dry_passall_1", "dry_passall_3", "dry_passall_5")] == [1.0, 0.0, 0.0]
    assert scores["dry_smooth_execution_rate"].value == pytest.approx(0.6)
    assert scores["dry_average_execution_time"].value >= 0.4
    rows = scores["dry_passall_1"].details["tests"]
    assert [r["passed"] for r in rows] == [True, True, False, False, False]
    # (stderr "warning: negative\n" + "\n" + stdout "1\n").strip()
    assert rows[2]["output_tail"] == "warning: negative\n\n1"
    assert (rows[3]["returncode"], rows[3]["runtime"], rows[3]["how"]) == (-1, 2.0, "timeout")
    assert rows[4]["returncode"] == 1 and "ZeroDivisionError: zero" in rows[4]["output_tail"]
    assert scores["dry_passall_1"].details["assembly"] == {"compute": "fenced"}
    # the fallback is the tools' unsafe-local sandbox (clean environment, rlimits: tests/tools/test_sandbox_env.py)
    assert {e.backend for e in scores["dry_passall_1"].evidence} == {"unsafe-local"}


async def test_real_run_without_unsafe_flag_is_infra_error_and_setup_failure():
    item = real_item()
    scores = await de.DryExperimentMetric().score(
        item, Response(item_id=item.id, model="t", text=REAL_ANSWER), ScoringContext()
    )
    assert {s.status for s in scores} == {"infra_error"}
    broken = real_item()
    broken.reference["unit_tests"][1]["data"] = "raise SystemExit(3)\n"
    m = de.DryExperimentMetric({"unsafe_local_exec": True, "dry_timeout_s": 2.0})
    scores = await m.score(
        broken, Response(item_id=item.id, model="t", text="def compute(x):\n    return x\n"), ScoringContext()
    )
    assert {s.status for s in scores} == {"infra_error"}
    assert scores[0].error.startswith("data script data_en.py failed for unit test(s) [1]")


# ------------------------------------------------------------------ D.12 verdicts, D.13 pass order, LaTeX reasons
def _judged(replies: list[str], options: dict | None = None):
    """Score one item whose 5 tests all need the judge (rc 0, output differs), judge replies in order."""
    results = {f"d{i}": ExecResult(stdout="loss 0.101", exit_code=0, wall_time_s=1.0) for i in range(5)}
    judge = NamedModel(
        name="o4-mini", role="judge", chat=GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in replies))
    )
    ctx = ScoringContext(sandbox=ScriptedSandbox(results), judges=[judge])
    item = dry_item(["loss 0.1"] * 5)
    metric = de.DryExperimentMetric({"dry_parallel_tests": False, **(options or {})})
    return item, ctx, metric


async def _score(item, ctx, metric):
    resp = Response(item_id=item.id, model="t", text="def f():\n    return 1\n")
    return {s.metric: s for s in await metric.score(item, resp, ctx)}


async def test_d12_verdict_is_stripped_and_case_folded():
    # "CORRECT", " Correct\n", "correct" pass; "INCORRECT", "Incorrect " fail -> p = 3
    verdicts = ["CORRECT", " Correct\n", "correct", "INCORRECT", "Incorrect "]
    scores = await _score(*_judged([json.dumps({"judgment": v, "reason": "r"}) for v in verdicts]))
    assert [scores[n].value for n in ("dry_passall_1", "dry_passall_3", "dry_passall_5")] == [1.0, 1.0, 0.0]
    assert [r["passed"] for r in scores["dry_passall_5"].details["tests"]] == [True, True, True, False, False]


@pytest.mark.parametrize(
    "bad",
    [
        '{"judgment": "", "reason": "r"}',
        '{"reason": "looks fine"}',
        '{"judgment": "maybe", "reason": "r"}',
        '{"judgment": null}',
    ],
)
async def test_d12_empty_missing_or_other_verdict_is_judge_error_not_a_failed_test(bad):
    # every attempt (3 per test) gets the bad verdict: a judge error, never "0 tests passed"
    scores = await _score(*_judged([bad] * 3 + ['{"judgment": "correct"}'] * 12))
    assert scores["dry_passall_1"].status == "judge_error" and scores["dry_passall_1"].value is None
    assert "unit test 0" in scores["dry_passall_5"].error
    assert scores["dry_smooth_execution_rate"].value == 1.0


async def test_d12_bad_verdict_then_good_one_is_retried():
    scores = await _score(*_judged(['{"judgment": ""}', '{"judgment": "Correct"}'] + ['{"judgment": "correct"}'] * 4))
    assert scores["dry_passall_5"].value == 1.0


async def test_judge_reason_keeps_latex_backslashes():
    # "\frac" in a JSON string is a form feed + "rac" to json.loads; the judge meant LaTeX
    replies = [
        r'{"judgment":"correct","reason":"E = \frac{1}{2}"}',
        r'{"judgment":"correct","reason":"\beta \approx 2"}',
        r'{"judgment":"correct","reason":"\nabla \cdot E"}',
    ] + ['{"judgment": "correct", "reason": "ok"}'] * 2
    scores = await _score(*_judged(replies))
    hows = [r["how"] for r in scores["dry_passall_5"].details["tests"]]
    assert hows[:3] == [
        "judge: correct (E = \\frac{1}{2})",
        "judge: correct (\\beta \\approx 2)",
        "judge: correct (\\nabla \\cdot E)",
    ]


@pytest.mark.parametrize(
    "res,paper,code",
    [
        (ExecResult(stdout="42", exit_code=1, wall_time_s=1.0), (False, "return code 1"), (True, "exact match")),
        (
            ExecResult(stdout="42", exit_code=-9, wall_time_s=5.0, timed_out=True),
            (False, "timeout"),
            (True, "exact match"),
        ),
        (ExecResult(stdout="41", exit_code=2, wall_time_s=1.0), (False, "return code 2"), (False, "return code 2")),
        (ExecResult(stdout="42", exit_code=0, wall_time_s=1.0), (True, "exact match"), (True, "exact match")),
    ],
)
async def test_d13_nonzero_exit_fails_whatever_it_printed(res, paper, code):
    """D.13: exit first (default); the upstream order (exact output first) is the named code variant."""
    item = dry_item(["42"] * 5)
    resp = Response(item_id=item.id, model="t", text="def f():\n    return 1\n")
    for order, want in (("paper", paper), ("code", code)):
        m = de.DryExperimentMetric({"dry_parallel_tests": False, "dry_pass_order": order})
        scores = {
            s.metric: s
            for s in await m.score(
                item, resp, ScoringContext(sandbox=ScriptedSandbox({f"d{i}": res for i in range(5)}))
            )
        }
        row = scores["dry_passall_5"].details["tests"][0]
        assert (row["passed"], row["how"]) == want, order
        assert scores["dry_passall_5"].value == float(want[0])


def test_unknown_pass_order_is_an_input_error():
    with pytest.raises(de.InputError, match="dry_pass_order"):
        de.DryExperimentMetric({"dry_pass_order": "fast"})
