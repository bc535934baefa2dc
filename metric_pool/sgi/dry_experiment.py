"""SGI-Bench Dry Experiment metrics (METRICS.md A.3): PassAll@1/3/5 (@5 primary), SER, AET. The completed functions are
swapped into ``incomplete_main_code`` (:func:`assemble`) and run once per unit test in ``ctx.sandbox`` (or, with
``unsafe_local_exec``, the tools' :class:`~sgieval.tools.sandbox.UnsafeLocalSandbox`: rlimits, NO isolation); pass
rule: D.12, D.13 (``dry_pass_order``)."""

from __future__ import annotations

import ast
import asyncio
import re
from typing import TYPE_CHECKING, Any, Literal, Sequence

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator

from ...core import DRY_EXPERIMENT, InputError, Item, Response, Score, ToolError, as_evidence, verdict_word
from ..base import Metric, ScoringContext, score_for
from ..registry import metric
from ..judge import as_data, ask_judge
from .common import BENCHMARK, extract_answer_tag, is_empty_or_none, spec

if TYPE_CHECKING:
    from ...tools import ExecResult


DEFAULT_TIMEOUT_S = 300.0
N_TESTS = 5

_A3 = "A.3"
PASSALL_1 = spec(
    "dry_passall_1",
    DRY_EXPERIMENT,
    _A3,
    "PassAll@1, 0/1 per item: 1 if at least 1 of the 5 unit tests passes (exact output match, else no error "
    "and the optional judge says correct).",
)
PASSALL_3 = spec(
    "dry_passall_3", DRY_EXPERIMENT, _A3, "PassAll@3, 0/1 per item: 1 if at least 3 of the 5 unit tests pass."
)
PASSALL_5 = spec(
    "dry_passall_5",
    DRY_EXPERIMENT,
    _A3,
    "PassAll@5, 0/1 per item: 1 if all 5 unit tests pass. Task score = mean x 100; the SGI-Score DE term.",
    primary=True,
    qualities=["accuracy"],
)
SER = spec(
    "dry_smooth_execution_rate",
    DRY_EXPERIMENT,
    _A3,
    "Smooth Execution Rate, 0-1 per item: (unit tests whose program exits with return code 0) / 5, "
    "regardless of correctness.",
)
AET = spec(
    "dry_average_execution_time",
    DRY_EXPERIMENT,
    _A3,
    "Average Execution Time in seconds per item: mean wall time over the unit tests with runtime > 0 (a timeout "
    "counts as the timeout, 300 s), -1 if none. Aggregation (C.4): step_4_score.py averages items with AET > 0; "
    "sgi_score.py averages every item, -1 included; see aggregate_aet().",
    range=(-1.0, float("inf")),
    unit="s",
    higher_is_better=False,
    aggregation="the per-model value is the mean over every scored item, items with AET -1 (no unit "
    "test with runtime > 0) included, as sgi_score.py averages (step_4_score.py leaves them out; METRICS.md "
    "C.4). Each item's AET averages the wall time of its unit tests with runtime > 0, passed and failed "
    "alike: a timeout counts as the timeout, a program killed at the memory or output limit as its time "
    "until the kill, and a program that never started is left out (A.3).",
)
SPECS = [PASSALL_1, PASSALL_3, PASSALL_5, SER, AET]


def aggregate_aet(values: Sequence[float], convention: str = "step4") -> float:
    """Task-level AET (seconds) from per-item values (METRICS.md A.3, C.4): ``"step4"`` (step_4_score.py) the mean over
    items with AET > 0 (NaN when none); ``"sgi_score"`` (sgi_score.py) the mean over every item. ValueError for an
    unknown convention or no values."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("aggregate_aet needs at least one value")
    if convention == "step4":
        pos = [v for v in vals if v > 0]
        return sum(pos) / len(pos) if pos else float("nan")
    if convention == "sgi_score":
        return sum(vals) / len(vals)
    raise ValueError(f"unknown AET convention {convention!r}: use 'step4' or 'sgi_score'")


def _compiles(src: str) -> bool:
    try:
        compile(src, "<string>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def function_lines(src: str) -> dict[str, tuple[int, int]]:
    """{name: (def line, end line)} (1-based, inclusive, no decorators) of the top-level ``def``s of ``src`` (the last
    of a name wins); SyntaxError when ``src`` does not parse."""
    return {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in ast.parse(src).body
        if isinstance(node, ast.FunctionDef)
    }


def replace_function(main_code: str, new_code: str, name: str) -> str:
    """Replace top-level function ``name`` of ``main_code`` by the same-named one of ``new_code`` (METRICS.md A.3
    "Assembly"). ValueError when a source or the result does not compile; KeyError when ``name`` is missing."""
    if not _compiles(main_code):
        raise ValueError("main code does not compile")
    if not _compiles(new_code):
        raise ValueError("answer code does not compile")
    f1, f2 = function_lines(main_code), function_lines(new_code)
    if name not in f1:
        raise KeyError(f"function {name!r} not in the main code")
    if name not in f2:
        raise KeyError(f"function {name!r} not in the answer")
    (s1, e1), (s2, e2) = f1[name], f2[name]
    lines1 = main_code.splitlines(keepends=True)
    lines2 = new_code.splitlines(keepends=True)[s2 - 1 : e2]
    if lines2 and not lines2[-1].endswith(("\n", "\r")):
        lines2[-1] += "\n"  # sgieval: keep the following main-code line on its own line
    lines1[s1 - 1 : e1] = lines2
    out = "".join(lines1)
    if not _compiles(out):
        raise ValueError("the code does not compile after the replacement")
    return out


_FENCED = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.S | re.I)


def answer_candidates(text: str) -> list[tuple[str, str]]:
    """Sources of the completed functions, in order: ("answer", the ``<answer>`` extraction or the whole response) and
    ("fenced", its fenced code blocks joined, sgieval's stand-in for the LLM-parsed answer) if any."""
    tagged = extract_answer_tag(text)
    answer = text if tagged is None else tagged
    out = [("answer", answer)]
    blocks = _FENCED.findall(answer) or _FENCED.findall(text)
    if blocks:
        out.append(("fenced", "\n\n".join(b.rstrip() + "\n" for b in blocks)))
    return out


def assemble(incomplete_main_code: str, response_text: str, functions: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The program to run: each function of ``functions`` replaced from the first candidate of :func:`answer_candidates`
    that works, else left unchanged. Returns (code, {name: "answer" | "fenced" | "unchanged: <last error>"})."""
    code = incomplete_main_code
    report: dict[str, str] = {}
    cands = answer_candidates(response_text)
    for name in functions:
        err = ""
        for label, cand in cands:
            try:
                code = replace_function(code, cand, name)
                report[name] = label
                break
            except (ValueError, KeyError, SyntaxError, RecursionError, MemoryError) as e:
                err = str(e)
        else:
            report[name] = f"unchanged: {err}"
    return code, report


def program_output(res: ExecResult) -> str:
    """A.3: (stderr + "\\n" + stdout).strip()."""
    return (res.stderr + "\n" + res.stdout).strip()


class DryJudgement(BaseModel):
    """The dry-experiment judge's reply (A.3): judgment "correct" | "incorrect" and a reason.

    METRICS.md D.12: ``judgment`` is compared after strip and case-folding
    (``"CORRECT"`` is correct); an empty, missing or any other value fails
    validation, so :func:`ask_judge` retries it and then reports a judge error
    (never a failed test)."""

    judgment: Literal["correct", "incorrect"]
    reason: str = Field(default="")

    @field_validator("judgment", mode="before")
    @classmethod
    def _fold(cls, v: Any) -> Any:
        if not isinstance(v, str) or not v.strip():
            raise ValueError("judgment must be \"correct\" or \"incorrect\" (got an empty or missing value)")
        return verdict_word(v)  # D.17: "Incorrect." is incorrect


PASS_ORDERS = ("paper", "code")  # option dry_pass_order: exit status first (D.13), or exact output first (upstream)


def unit_test_verdict(
    output: str, reference: str, returncode: int, timed_out: bool, order: str = "paper", killed: str | None = None
) -> tuple[bool | None, str]:
    """(passed, how) of one unit test before the judge (None: the judge decides). ``"paper"`` (D.13): a timeout or
    non-zero exit fails, then the output is compared exactly; ``"code"`` (A.3, upstream order): an exact match passes
    even after a non-zero exit. ``killed``: the sandbox limit that ended the program, said in ``how``. ValueError for
    another ``order``."""
    if order not in PASS_ORDERS:
        raise ValueError(f"unknown dry_pass_order {order!r}: use 'paper' or 'code'")
    failed_exit = timed_out or returncode != 0
    how_exit = "timeout" if timed_out else (killed or f"return code {returncode}")
    if order == "paper" and failed_exit:
        return False, how_exit
    if output == reference:  # A.3 pass rule 1: exact equality with the unstripped reference
        return True, "exact match"
    if failed_exit:
        return False, how_exit
    return None, "output differs"


DRY_JUDGE_SYSTEM = "You are an expert in checking whether a program's output matches a reference output."
DRY_JUDGE_TEMPLATE = """Decide whether the model output matches the reference output and explain briefly.

Rules:
1. Check every numerical value strictly: every digit must match. Any inconsistency means "incorrect".
2. For training-related losses or metrics, a relative difference of up to 2% between the model output and the
   reference output is acceptable; more than 2% is "incorrect".
3. Reply with a JSON object: {{"judgment": "correct" or "incorrect", "reason": "<brief explanation>"}}.

## Reference output
{reference}

## Model output
{output}
"""


@metric(*SPECS, scope=BENCHMARK)
class DryExperimentMetric(Metric):
    """PassAll@1/3/5, SER and AET of one item. Options: ``dry_timeout_s`` (300), ``unsafe_local_exec`` (also read from
    ``ctx.options``), ``dry_parallel_tests`` (True), ``dry_judge_attempts`` (3), ``dry_pass_order`` ("paper" | "code",
    :func:`unit_test_verdict`)."""

    @classmethod
    def from_options(cls, options: dict) -> "DryExperimentMetric":
        return cls(options)

    def __init__(self, options: dict | None = None):
        opts = dict(options or {})
        self.timeout_s = float(opts.get("dry_timeout_s", DEFAULT_TIMEOUT_S))
        self.unsafe_local_exec = bool(opts.get("unsafe_local_exec", False))
        self.parallel = bool(opts.get("dry_parallel_tests", True))
        self.judge_attempts = int(opts.get("dry_judge_attempts", 3))
        self.pass_order = str(opts.get("dry_pass_order", "paper"))
        if self.pass_order not in PASS_ORDERS:
            raise InputError(
                f"unknown dry_pass_order {self.pass_order!r}",
                what="metric option dry_pass_order",
                fix="use 'paper' (METRICS.md D.13) or 'code' (upstream order)",
            )

    @staticmethod
    def _reference(item: Item) -> tuple[str, list[str], list[dict[str, str]]]:
        ref = item.reference
        fix = "load SGI-DryExperiment records with the SGI item contract (SGI_ITEMS.md)"
        if not isinstance(ref, dict):
            raise InputError("reference is not a dict", what=f"item {item.id}", fix=fix)
        for key in ("incomplete_main_code", "incomplete_functions", "unit_tests"):
            if key not in ref:
                raise InputError(f"reference has no field {key!r}", what=f"item {item.id}", fix=fix)
        tests = ref["unit_tests"]
        if (
            not isinstance(tests, list)
            or len(tests) != N_TESTS
            or not all(
                isinstance(t, dict) and isinstance(t.get("data"), str) and isinstance(t.get("output"), str)
                for t in tests
            )
        ):
            raise InputError(
                "reference 'unit_tests' must be 5 objects with string 'data' and 'output'",
                what=f"item {item.id}",
                fix=fix,
            )
        return ref["incomplete_main_code"], list(ref["incomplete_functions"]), tests

    def _run_one(self, sandbox: Any, code: str, data: str) -> ExecResult:
        return sandbox.run(code, files={"data_en.py": data}, setup_scripts=["data_en.py"], timeout_s=self.timeout_s)

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        try:
            main_code, functions, tests = self._reference(item)
        except InputError as e:
            return self.failed(item, response, "input_error", str(e))

        if is_empty_or_none(response.text):
            no_program = [
                {"test": i, "passed": False, "returncode": None, "runtime": -1.0, "how": "no program (empty response)"}
                for i in range(N_TESTS)
            ]
            return self._scores(
                item, response, no_program, {}, "empty or 'none' response: no program written (A.0/A.3)", None, []
            )

        sandbox = ctx.sandbox
        if sandbox is None and (self.unsafe_local_exec or ctx.options.get("unsafe_local_exec")):
            from ...tools import UnsafeLocalSandbox  # the tools folder loads numpy: not at start-up

            sandbox = UnsafeLocalSandbox()
        if sandbox is None:
            return self.failed(
                item,
                response,
                "infra_error",
                "no sandbox configured: dry-experiment code needs a sandbox (bubblewrap/E2B), "
                "or allow the unsafe subprocess fallback with --unsafe-local-exec",
            )
        code, assembly = assemble(main_code, response.text, functions)
        try:
            runs = (asyncio.to_thread(self._run_one, sandbox, code, t["data"]) for t in tests)
            results = await asyncio.gather(*runs) if self.parallel else [await r for r in runs]
        except (ToolError, OSError) as e:
            return self.failed(item, response, "infra_error", f"sandbox {getattr(sandbox, 'name', '?')} failed: {e}")
        setup_failed = [i for i, r in enumerate(results) if r.setup_failed]
        if setup_failed:
            r = results[setup_failed[0]]
            return self.failed(
                item,
                response,
                "infra_error",
                f"data script data_en.py failed for unit test(s) {setup_failed} in sandbox "
                f"{r.backend or getattr(sandbox, 'name', '?')}: {program_output(r)[-500:]}",
            )

        judge = next(iter(ctx.judges_for(response.model)), None)
        rows: list[dict[str, Any]] = []
        evidence: list[Any] = []  # sandbox-run dicts and judge replies (core.as_evidence types them)
        judge_error: str | None = None
        for i, (t, res) in enumerate(zip(tests, results)):
            row, error = await self._test_row(i, t["output"], res, getattr(sandbox, "name", ""), judge, evidence)
            rows.append(row)
            judge_error = error or judge_error
        judge_name = judge.name if judge is not None else "objective"
        return self._scores(item, response, rows, assembly, "", judge_error, evidence, judge_name=judge_name)

    async def _test_row(
        self, i: int, reference: str, res: ExecResult, backend: str, judge: Any, evidence: list[Any]
    ) -> tuple[dict[str, Any], str | None]:
        """Unit test ``i``'s row and its judge error; appends its evidence."""
        out = program_output(res)
        if res.exit_code is None and not res.timed_out:  # never started: launch exception
            runtime, rc = -1.0, 1
        elif res.timed_out:
            runtime, rc = self.timeout_s, -1
        else:
            runtime, rc = float(res.wall_time_s), int(res.exit_code or 0)  # not None here: the process ran
        row: dict[str, Any] = {"test": i, "returncode": rc, "runtime": runtime, "timed_out": res.timed_out}
        row["output_tail"] = out[-300:]
        evidence.append(
            {
                "tool": "sandbox", "input": f"unit test {i}", "backend": res.backend or backend,
                "output": out[-2000:], "exit_code": res.exit_code, "duration_s": res.wall_time_s,
                **({"killed_reason": res.killed_reason} if res.killed_reason else {}),
            }
        )  # fmt: skip
        killed = res.outcome if res.killed_reason and not res.timed_out else None
        if killed:
            row["killed"] = killed
        passed, how = unit_test_verdict(out, reference, rc, res.timed_out, self.pass_order, killed)
        if passed is not None:
            return {**row, "passed": passed, "how": how}, None
        if judge is None:
            return {**row, "passed": False, "how": "output differs; judge not run (no judge configured)"}, None
        human = DRY_JUDGE_TEMPLATE.format(
            reference=as_data(reference, "REFERENCE_OUTPUT"), output=as_data(out, "MODEL_OUTPUT")
        )
        msgs = [SystemMessage(content=DRY_JUDGE_SYSTEM), HumanMessage(content=human)]
        reply = await ask_judge(judge, msgs, DryJudgement, max_attempts=self.judge_attempts, candidate=out)
        evidence.append(reply.evidence(test=i))
        if reply.parsed is None:
            return {**row, "passed": False, "how": f"judge error: {reply.error}"}, f"unit test {i}: {reply.error}"
        ok = reply.parsed.judgment == "correct"  # folded by DryJudgement (D.12)
        return {**row, "passed": ok, "how": f"judge: {reply.parsed.judgment} ({reply.parsed.reason})"}, None

    def _scores(
        self,
        item: Item,
        response: Response,
        rows: list[dict[str, Any]],
        assembly: dict[str, str],
        note: str,
        judge_error: str | None,
        evidence: list[Any],
        judge_name: str = "objective",
    ) -> list[Score]:
        p = sum(1 for r in rows if r["passed"])
        ser = sum(1 for r in rows if r["returncode"] == 0) / N_TESTS
        counted = [r for r in rows if r["runtime"] > 0]
        details = {"passed": p, "tests": rows, "assembly": assembly}
        summary = (
            (note + "; " if note else "")
            + f"{p}/5 unit tests passed: "
            + "; ".join(f"#{r['test']} {'pass' if r['passed'] else 'fail'} ({r['how']})" for r in rows)
        )

        ev = [as_evidence(e) for e in evidence]

        def mk(s: Any, value: float | None, rationale: str, **fields: Any) -> Score:
            return score_for(item, response, s.name, value, rationale=rationale, details=details, evidence=ev, **fields)

        failed = {"status": "judge_error", "error": judge_error} if judge_error else {}
        out = [
            mk(s, None if judge_error else float(p >= k), summary, judge=judge_name, **failed)
            for s, k in ((PASSALL_1, 1), (PASSALL_3, 3), (PASSALL_5, 5))
        ]
        out.append(mk(SER, ser, f"{int(round(ser * N_TESTS))}/5 programs exited with return code 0"))
        if not counted:
            return [*out, mk(AET, -1.0, "no test with runtime > 0: AET = -1")]
        parts = [
            f"#{r['test']} {r['runtime']:.3g} s ({'pass' if r['passed'] else 'fail'}"
            + (", timeout" if r.get("timed_out") else f", {r['killed']}" if r.get("killed") else "")
            + ")"
            for r in counted
        ]
        left = [f"#{r['test']}" for r in rows if r["runtime"] <= 0]
        aet = sum(r["runtime"] for r in counted) / len(counted)
        why = f"mean runtime over {len(counted)} test(s) with runtime > 0: " + "; ".join(parts)
        return [*out, mk(AET, aet, why + (f"; left out (never ran): {', '.join(left)}" if left else ""))]
