"""SGI-Bench Experimental Reasoning metrics (METRICS.md A.5, D.3, D.4, D.8, D.9): ``mca`` (primary, the ER term),
``mca_lenient``, ``mca_code`` (the published code's reading) and ``reasoning_validity`` (judge, 0-10)."""

from __future__ import annotations

import re
from typing import Any, Collection

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator

from ...core import EXPERIMENTAL_REASONING, InputError, Item, Response, Score, final_text, judge_number
from ..answers import answer_line_letter, boxed_spans, final_line, unwrap_letter
from ..base import FunctionMetric, Metric, MetricResult, ScoringContext
from ..judge import as_data
from ..registry import metric
from .common import BENCHMARK, judge_panel, reference_field, spec


_D3_WRAPPERS = re.compile(r"\\(?:text|mathrm)\s*\{([^{}]*)\}")


def option_letter(box: str) -> str | None:
    """The option letter a box holds (METRICS.md D.3), or None: spaces, ``$`` and ``**`` removed, ``\\text{}`` /
    ``\\mathrm{}`` and surrounding parentheses unwrapped; one ASCII letter must be left, returned as written."""
    t = box
    for _ in range(3):
        t = _D3_WRAPPERS.sub(r"\1", t)
    t = "".join(t.split()).replace("$", "").replace("**", "")
    while len(t) >= 2 and t[0] == "(" and t[-1] == ")":
        t = t[1:-1]
    return t if re.fullmatch(r"[A-Za-z]", t) else None


def _last_option_box(text: str, allowed: set[str] | None) -> tuple[int, str] | None:
    for pos, box in reversed(boxed_spans(text)):
        got = option_letter(box)
        if got is not None and (allowed is None or got.upper() in allowed):
            return pos, got
    return None


def final_option(text: str, n_options: "int | Collection[str] | None" = None) -> tuple[str | None, str]:
    """``(letter or None, how it was found)`` (METRICS.md D.3, D.8, D.9): the later of the last ``\\boxed{...}`` holding
    an option letter and a final ``Answer: X`` line (:func:`sgieval.metric_pool.answers.answer_line_letter`); letters
    past the options are skipped. ``(None, "no answer found")`` when neither exists (no answer, not a wrong answer)."""
    t = final_text(text or "")
    letters = [chr(65 + k) for k in range(n_options)] if isinstance(n_options, int) else n_options
    allowed = None if letters is None else {x.upper() for x in letters}
    box = _last_option_box(t, allowed)
    letter, (pos, _) = answer_line_letter(t), final_line(t) or (0, "")  # a letter implies a final line
    if letter is not None and (allowed is None or letter.upper() in allowed) and (box is None or box[0] <= pos):
        return letter, "final Answer: line"
    if box is not None:
        return box[1], "last \\boxed{} holding an option letter"
    return None, "no answer found"


def n_options_of(item: Item) -> int | None:
    opts = item.reference.get("options") if isinstance(item.reference, dict) else None
    return len(opts) if isinstance(opts, (list, dict)) and opts else None


def gold_letter(item: Item) -> str:
    """``chr(65 + reference["answer"])`` (A.5: a 0-based int); InputError when missing or not an index 0..25."""
    ans = reference_field(item, "answer")
    text = str(ans).strip()
    if isinstance(ans, bool) or not re.fullmatch(r"1?[0-9]|2[0-5]", text):  # as int() writes 0..25
        raise InputError(
            f"reference answer {ans!r} is not a 0-based option index 0..25",
            what=f"item {item.id}",
            fix="set reference['answer'] to the 0-based index of the correct option",
        )
    return chr(65 + int(text))


_CODE_RE = re.compile(r"\\boxed\{([A-Z])\}")


def mca_code(text: str, gold: str) -> int:
    """The published code's MCA (A.5): the first ``\\boxed{X}`` with X one upper-case letter, compared with the gold
    letter ignoring case."""
    m = _CODE_RE.search(final_text(text or ""))
    return int(m is not None and m.group(1).lower() == gold.lower())


_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_ANSWER_RE = re.compile(r"answer\s*(?:is)?\s*[:：]?[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
_STANDALONE = re.compile(
    r"^\s*(?:(?:\(|\[|\*\*|\*|__|_|\$)\s*([A-Za-z]|\d{1,2})\s*(?:\)|\]|\*\*|\*|__|_|\$)"
    r"|([A-Za-z]|\d{1,2})(?=\s*(?:[.,;:)]|$)))"
)


def _lenient_letter(token: str, n_options: int) -> str | None:
    t = token
    for _ in range(3):
        t = _WRAPPERS.sub(r"\1", t)
    t = "".join(t.split()).strip("().:*$[]")
    if re.fullmatch(r"[A-Za-z]", t):
        return t.upper()
    if re.fullmatch(r"\d{1,2}", t) and int(t) < max(n_options, 1):
        return chr(65 + int(t))
    m = re.match(r"([A-Z])[.)]", t)
    return m.group(1) if m else None


def _phrase_letter(value: str, n_options: int) -> str | None:
    """The option an "Answer: ..." phrase gives when its letter (or 0-based index) stands alone (D.9)."""
    v = value
    for _ in range(3):
        v = _WRAPPERS.sub(r"\1", v)
    whole = unwrap_letter(v)
    if whole is not None:
        return whole.upper()
    m = _STANDALONE.match(v)
    if not m:
        return None
    tok = m.group(1) or m.group(2)
    if tok.isdigit():
        return chr(65 + int(tok)) if int(tok) < max(n_options, 1) else None
    return tok.upper()


def extract_option_lenient(text: str, n_options: int = 26) -> str | None:
    """Lenient option extraction (``mca_lenient`` only): the later of the last ``\\boxed{...}``
    (wrappers and ``()[].:*$`` dropped; a letter in any case, a 0-based index, or "B. text") and the last "Answer: X" /
    "answer is X" whose letter or index stands alone (:func:`_phrase_letter`); letters past ``n_options`` are
    skipped."""
    text = final_text(text or "")
    allowed = {chr(65 + k) for k in range(max(1, min(n_options, 26)))}
    boxes = [(pos, _lenient_letter(box, n_options)) for pos, box in boxed_spans(text)[-1:]]
    phrases = [(m.start(), _phrase_letter(m.group(1), n_options)) for m in _ANSWER_RE.finditer(text)]
    cands = [c for c in boxes if c[1] in allowed] + [c for c in phrases if c[1] in allowed][-1:]
    return max(cands)[1] if cands else None


MCA = spec(
    "mca",
    EXPERIMENTAL_REASONING,
    "A.5, D.3, D.8, D.9",
    "Multi-choice accuracy, 0/1 per item: the option letter of the reply after its reasoning must equal the "
    "gold letter chr(65 + answer) exactly (case-sensitive: \\boxed{b} is wrong for B). The letter is the LAST "
    "\\boxed{...} that holds a single option letter (spaces, $, ** and surrounding parentheses removed, "
    "\\text{}/\\mathrm{} unwrapped; boxes holding anything else skipped) or a final 'Answer: X' line (also "
    "**Answer: X**; $X$, **X**, *X*, _X_, (X) and a trailing period unwrapped; the letter must stand alone), "
    "whichever comes later. Neither: 0, counted as no answer found. Task score = mean x 100; the SGI-Score ER "
    "term.",
    primary=True,
    qualities=["accuracy"],
)
MCA_LENIENT = spec(
    "mca_lenient",
    EXPERIMENTAL_REASONING,
    "A.5 (sgieval extension)",
    "Lenient multi-choice accuracy, 0/1: the later of the last \\boxed{} (\\text{} unwrapped, case folded, "
    "0-based indices mapped to letters) and the last 'Answer: X' / 'answer is X' whose letter or index stands "
    "alone ('ANSWER: I don't know' is no answer). Not in the SGI-Score.",
    variant_of="mca",
)
MCA_CODE = spec(
    "mca_code",
    EXPERIMENTAL_REASONING,
    "A.5",
    "Published-code multi-choice accuracy, 0/1: the FIRST \\boxed{X} with X one upper-case letter "
    "A-Z, compared with the gold letter ignoring case.",
    variant_of="mca",
)
RV = spec(
    "reasoning_validity",
    EXPERIMENTAL_REASONING,
    "A.5, D.4",
    "Reasoning validity, 0-10 per item (judge): logical coherence and alignment with the numbered "
    "reference steps; rubric bands 10 / 7-9 / 4-6 / 1-3 / 0. The judge's structured integer score "
    "(out-of-range = parse error, retried). Mean over judges. The benchmark reports RV/10 x 100, i.e. "
    "sgieval's 0-10 mean x 10. Not in the SGI-Score.",
    kind="judge",
    range=(0.0, 10.0),
)


def _mca_fn(item: Item, response: Response):
    gold = gold_letter(item)
    got, how = final_option(response.text, n_options_of(item))
    v = int(got == gold)
    if got is None:
        return MetricResult(
            v,
            f"no answer found (no \\boxed{{}} holds an option letter, no final Answer: line), gold {gold!r}: 0",
            {"extracted": None, "gold": gold, "no_answer": True},
        )
    return MetricResult(
        v, f"extracted {got!r} ({how}), gold {gold!r}: {v}", {"extracted": got, "gold": gold, "found_by": how}
    )


def _mca_lenient_fn(item: Item, response: Response):
    gold = gold_letter(item)
    opts = item.reference.get("options") if isinstance(item.reference, dict) else None
    got = extract_option_lenient(response.text, len(opts) if isinstance(opts, list) and opts else 26)
    v = int(got == gold)
    return MetricResult(v, f"lenient extraction {got!r}, gold {gold!r}: {v}", {"extracted": got, "gold": gold})


def _mca_code_fn(item: Item, response: Response):
    gold = gold_letter(item)
    m = _CODE_RE.search(final_text(response.text or ""))
    v = mca_code(response.text, gold)
    return MetricResult(v, f"first \\boxed{{[A-Z]}}: {m.group(1) if m else None!r}, gold {gold!r}: {v}")


@metric(MCA, MCA_LENIENT, MCA_CODE, scope=BENCHMARK)
class MultiChoiceMetric(FunctionMetric):
    def __init__(self) -> None:
        super().__init__(self.specs, [_mca_fn, _mca_lenient_fn, _mca_code_fn])


class ReasoningValidityJudgement(BaseModel):
    """The RV judge's reply: a short ``rationale`` and an integer ``score`` 0..10
    (pydantic rejects values outside the range, and METRICS.md D.17 a boolean,
    null, words or a decimal, so :func:`ask_judge` retries)."""

    rationale: str = ""
    score: int = Field(ge=0, le=10)

    @field_validator("score", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        return judge_number(v, integer=True)


RV_SYSTEM = """You are a strict evaluator of the validity of a model's reasoning process. Score the reasoning \
validity from 0 (completely invalid) to 10 (fully rigorous).

Evaluation rules:
1. Identify the complete reasoning process in the model prediction (ignore a bare final answer given without \
reasoning).
2. Judge two criteria: logical coherence (sequential, self-consistent steps with no contradictions or illogical \
deductions) and alignment with the reference reasoning (direction, key premises and deduction logic; partial \
alignment earns partial credit).
3. Deduct points for irrelevant content, missing key reasoning steps (even when the final answer is right) and \
flawed logic (circular reasoning, false premises).
4. Do not reward the final answer itself: a correct answer with invalid reasoning scores low; a wrong answer with \
partly valid reasoning may score higher.

Scoring guide:
- 10: fully rigorous and coherent, all key steps and logic match the reference reasoning.
- 7-9: mostly coherent; minor logical gaps or partial misalignment; no major contradictions.
- 4-6: obvious logical flaws (e.g. a missing key step, minor contradictions) or limited alignment.
- 1-3: barely valid; severe flaws (several contradictions) or almost no alignment.
- 0: completely invalid, self-contradictory, or irrelevant."""

RV_USER = """# Question
{question}

# Reference Reasoning
{steps}

# Model Prediction
{prediction}"""

MCQ_INSTRUCTION = (
    "Please solve the following multiple-choice question step-by-step. Reason step by step, then "
    "give the letter of the single most correct option enclosed in \\boxed{}, e.g. \\boxed{A}."
)


def question_block(item: Item) -> str:
    """The question the RV judge sees (A.5): the instruction, the raw question and the options "A. ...";
    ``item.prompt`` when the raw question or options are absent."""
    ref = item.reference if isinstance(item.reference, dict) else {}
    q, opts = item.metadata.get("question"), ref.get("options")
    if not q or not isinstance(opts, list):
        return item.prompt
    lines = "".join(f"{chr(65 + i)}. {o}\n" for i, o in enumerate(opts))
    return f"{MCQ_INSTRUCTION}\n\nQuestion:\n{q}\n\nOptions:\n{lines}"


def rv_messages(item: Item, response_text: str, images: bool = True) -> list:
    """Judge messages for RV: the question images (not the step images), then the question block, the numbered
    reference steps and the model output as delimited data."""
    steps = reference_field(item, "steps")
    steps_text = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps)) if isinstance(steps, list) else str(steps)
    text = RV_USER.format(question=question_block(item), steps=steps_text, prediction=as_data(response_text))
    blocks: list[dict[str, Any]] = []
    if images:
        for b64 in item.metadata.get("images") or []:
            blocks.append({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}})
    content: Any = blocks + [{"type": "text", "text": text}] if blocks else text
    return [SystemMessage(content=RV_SYSTEM), HumanMessage(content=content)]


@metric(RV, scope=BENCHMARK)
class ReasoningValidityMetric(Metric):
    """``reasoning_validity``, 0-10 (A.5, D.4): the mean of the judges' parsed scores; no parsed reply ->
    ``judge_error`` (never 0, unlike the published code). ``images``: send the question images."""

    def __init__(self, images: bool = True):
        self.images = images

    @classmethod
    def from_options(cls, options: dict) -> "ReasoningValidityMetric":
        """With ``options["rv_images"]`` (default True)."""
        return cls(images=bool(options.get("rv_images", True)))

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        return await judge_panel(
            self,
            item,
            response,
            ctx,
            lambda: rv_messages(item, response.text, self.images),
            ReasoningValidityJudgement,
            candidate=response.text,
            value=lambda p: float(p.score),
            evidence_fields=lambda p: {"score": p.score},
            per_judge=lambda p: p.model_dump(),
            key="score",
            rationale=lambda per, k: "; ".join(
                f"{n}: {p['score']:g}/10{f' (mean of {k} repeats)' if k > 1 else ''} ({p['rationale']})"
                for n, p in per.items()
            ),
        )
