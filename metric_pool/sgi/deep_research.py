"""SGI-Bench Deep Research metrics (METRICS.md A.1, A.0, D.1): ``em``, ``em_normalised`` beside it (never instead)
and ``sla`` (the judge's per-step correct proportion)."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator, model_validator

from ...core import DEEP_RESEARCH, Evidence, InputError, Item, ModelCallError, Response, Score, verdict_word
from ...models import NamedModel, ainvoke, message_text
from ..answers import normalised_match
from ..base import Metric, ScoringContext
from ..judge import as_data
from ..registry import metric
from .common import BENCHMARK, NONE_ANSWER, is_empty_or_none, judge_panel, model_answer, reference_field, spec

EM = spec(
    "em",
    DEEP_RESEARCH,
    "A.1",
    "Exact Match, 0/1 per item: EM = 1 if answer == model_answer or answer == llm_parsed_answer "
    "(Python string equality, no normalisation), else 0. model_answer = text between the last <answer> "
    "and the first </answer> after it, stripped (case-sensitive tags; empty tags = empty answer), falling "
    "back to the whole response; an empty or 'none' reply gives 'None'. llm_parsed_answer is the raw output "
    "of the optional answer parser (the first judge-role model; omitted when no judge is configured). "
    "Task score = mean x 100; the SGI-Score DR term.",
    primary=True,
    qualities=["accuracy"],
)
EM_NORMALISED = spec(
    "em_normalised",
    DEEP_RESEARCH,
    "A.1 (sgieval extension, reported beside em)",
    "Normalised Exact Match, 0/1 per item: 1 if the reference and model_answer (or llm_parsed_answer) are "
    "equal after the METRICS.md D.11 normalisation (Unicode NFKC, every dash or minus sign to '-', whitespace "
    "collapsed, case folded), or, when both read as numbers (currency symbols and thousands separators "
    "removed, 1/2 and 6.02 x 10^23 forms read), are equal after rounding both (half up) to the decimal places "
    "written in the reference ('0.25' vs '0.250' -> 1; reference '3' matches '3.4'). Not part of the SGI-Score.",
    variant_of="em",
)
SLA = spec(
    "sla",
    DEEP_RESEARCH,
    "A.1",
    "Step-Level Accuracy, 0-1 per item: the judge splits the model's solution into steps and marks each "
    "'correct' or 'incorrect' against the reference steps and answer (at least one step incorrect when the "
    "final answer is wrong); SLA = #correct / #steps. Mean over judges when several are configured. "
    "Task score = mean x 100; not in the SGI-Score.",
    kind="judge",
)

NUMERIC_EXAMPLE = "0.25"
PHRASE_EXAMPLE = "T cell and B cell"


def parser_example(answer: str) -> str:
    """The answer parser's example value (A.1 step 2): "0.25" for a numeric reference (Python ``float(answer)``
    succeeds: "1e5", "inf", surrounding spaces), else "T cell and B cell"."""
    try:
        float(answer)
    except (TypeError, ValueError):
        return PHRASE_EXAMPLE
    return NUMERIC_EXAMPLE


PARSER_SYSTEM = """You convert text into a value that has exactly the format of an example value.

Instructions:
1. Look at the example value inside the <example> tags and its type inside the <type> tags.
2. Read the text inside the <input_text> tags; ignore explanations and keep only the final value it gives.
3. Reformat that value to match the example's format and type without changing its meaning.
4. Output only the value: no explanation, no quotes, no other text.

<example>
{example}
</example>

<type>
{type}
</type>
"""

PARSER_USER = """
<input_text>
{text}
</input_text>
"""


def parser_messages(extracted: str, example: str) -> list:
    """Messages for the LLM answer parser (A.0): the example and its type, then the extracted answer."""
    typ = "One letter" if len(example) == 1 else str(type(example))
    return [
        SystemMessage(content=PARSER_SYSTEM.format(example=example, type=typ)),
        HumanMessage(content=PARSER_USER.format(text=extracted)),
    ]


async def parse_answer(parser: NamedModel, extracted: str, reference: str) -> tuple[str, Any]:
    """(parsed answer, evidence) of the LLM answer parser (A.0): its raw, unstripped output, or ``extracted`` when
    the call fails after its retries."""
    example = parser_example(reference)
    ev: dict[str, Any] = {"tool": "answer_parser", "judge": parser.name, "input": extracted, "example": example}
    try:
        raw = message_text(await ainvoke(parser, parser_messages(extracted, example)))
    except ModelCallError as e:
        why = f"answer parser failed, extracted answer used instead: {e.message}"
        return extracted, ev | {"raw": None, "error": why}
    return raw, ev | {"raw": raw, "error": None}


@metric(EM, EM_NORMALISED, scope=BENCHMARK)
class ExactMatchMetric(Metric):
    """``em`` (primary, A.1) and ``em_normalised``, 0/1. The LLM answer parser is the first judge allowed for the
    target (when ``use_parser``); an empty or "none" reply scores against "None" with no parser call (A.0)."""

    def __init__(self, use_parser: bool = True):
        self.use_parser = use_parser

    @classmethod
    def from_options(cls, options: dict) -> "ExactMatchMetric":
        """With ``options["dr_use_parser"]`` (default True)."""
        return cls(use_parser=bool(options.get("dr_use_parser", True)))

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        try:
            ref = str(reference_field(item, "answer"))
        except InputError as e:
            return self.failed(item, response, "input_error", str(e))
        parsed: str | None = None
        evidence: list[Evidence] = []
        judge_name = "objective"
        if is_empty_or_none(response.text):
            extracted = parsed = NONE_ANSWER
        else:
            extracted = model_answer(response.text)
            parsers = ctx.judges_for(response.model) if self.use_parser else []
            if parsers:
                parsed, ev = await parse_answer(parsers[0], extracted, ref)
                evidence, judge_name = [ev], parsers[0].name
        em = int(ref in (extracted, parsed))  # A.1 step 3: ref == extracted or ref == parsed (plain ==; None never)
        cands = [extracted] + ([parsed] if parsed is not None else [])
        emn = int(any(normalised_match(ref, c) for c in cands))
        details: dict[str, Any] = {"model_answer": extracted, "model_answer_after_llm_parser": parsed, "reference": ref}
        if not extracted.strip():  # empty <answer></answer> (D.1): no answer found, apart from wrong answers
            details["no_answer"] = True
        how = "no answer parser" if parsed is None or judge_name == "objective" else f"parser {judge_name}"
        em_why = f"reference {ref!r} vs model_answer {extracted!r}"
        em_why += (f" / parsed {parsed!r}" if parsed is not None else "") + f" ({how}): EM {em}"
        emn_why = f"normalised comparison of {ref!r} with {cands!r}: {emn}"
        return [
            Score(item_id=item.id, model=response.model, metric=spec.name, value=float(v), judge=judge_name,
                  evidence=evidence, details=details, rationale=why)
            for spec, v, why in ((EM, em, em_why), (EM_NORMALISED, emn, emn_why))
        ]  # fmt: skip


class StepJudgement(BaseModel):
    """One judged step: the model's step, the judge's reason, and ``judge`` in
    {"correct", "incorrect"} (case and surrounding spaces are normalised)."""

    solution_step: str = ""
    reason: str = ""
    judge: Literal["correct", "incorrect"]

    @field_validator("solution_step", "reason", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return "" if v is None else str(v)

    @field_validator("judge", mode="before")
    @classmethod
    def _verdict(cls, v: Any) -> Any:
        return verdict_word(v)  # D.17: strip, case-fold, trailing punctuation removed ("Incorrect." is incorrect)


class StepJudgements(BaseModel):
    """The SLA judge's reply: a non-empty list of :class:`StepJudgement`.
    A bare JSON list (the benchmark's own output format) is accepted too."""

    steps: list[StepJudgement] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        if isinstance(data, list):
            return {"steps": data}
        if isinstance(data, dict) and "steps" not in data and "judge" in data:
            return {"steps": [data]}
        return data


SLA_SYSTEM = """You are an expert who validates LLM-generated solutions. Compare the LLM solution step by step \
with the reference solution and output only a structured verification list.

Instructions:
1. Break the LLM solution into its individual steps and evaluate each against the reference solution steps.
2. For each step give: "solution_step" (the part of the LLM solution being evaluated), "reason" (a critical \
explanation of any error, omission or deviation from the reference approach; be stringent), and "judge" \
(exactly "correct" or "incorrect").
3. If the LLM's final answer is incorrect, mark at least one step "incorrect".
4. Point out even minor inaccuracies or logical flaws.
5. Do not answer the question yourself; only evaluate.
Reply as {"steps": [{"solution_step": "...", "reason": "...", "judge": "correct"}, ...]}."""

SLA_USER = """## Question
{question}

## Reference Solution Steps
{steps}

## Reference Answer
{answer}

## LLM Solution Steps
{solution}

## LLM Answer
{model_answer}"""


def sla_messages(item: Item, response_text: str, extracted: str) -> list:
    """Judge messages for SLA (A.1): question, reference steps, reference answer, then the response and
    ``model_answer`` as delimited data."""
    steps = reference_field(item, "steps")
    steps_text = "\n".join(str(s) for s in steps) if isinstance(steps, list) else str(steps)
    question = item.metadata.get("question") or item.prompt
    return [
        SystemMessage(content=SLA_SYSTEM),
        HumanMessage(
            content=SLA_USER.format(
                question=question,
                steps=steps_text,
                answer=reference_field(item, "answer"),
                solution=as_data(response_text),
                model_answer=as_data(extracted, "MODEL_ANSWER"),
            )
        ),
    ]


def step_level_accuracy(steps: list[StepJudgement]) -> float:
    """SLA = #steps judged "correct" / #steps (A.1) of a validated, non-empty :class:`StepJudgements` list."""
    return sum(s.judge == "correct" for s in steps) / len(steps)


@metric(SLA, scope=BENCHMARK)
class StepLevelAccuracyMetric(Metric):
    """``sla``, 0-1 (A.1): the mean of the judges' SLAs (:func:`judge_panel`)."""

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        text = NONE_ANSWER if is_empty_or_none(response.text) else response.text
        return await judge_panel(
            self,
            item,
            response,
            ctx,
            lambda: sla_messages(item, text, model_answer(response.text)),
            StepJudgements,
            candidate=text,
            value=lambda p: step_level_accuracy(p.steps),
            evidence_fields=lambda p: {"steps": [s.model_dump() for s in p.steps]},
            per_judge=lambda p: {"sla": step_level_accuracy(p.steps), "steps": [s.model_dump() for s in p.steps]},
            key="sla",
            rationale=lambda per, k: "; ".join(
                f"{name}: {sum(s['judge'] == 'correct' for s in p['steps'])}/{len(p['steps'])} steps correct"
                for name, p in per.items()
            ),
            extra=lambda per: {"n_steps": sum(len(p["steps"]) for p in per.values())},
        )
