"""Rubric authoring: :func:`draft_rubric` (a rubric for one quality) and the dialogue of ``sgieval metric define``
(propose, revise, save), each with an LLM path and a deterministic offline one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from ..core import Criterion, CriterionTool, InputError, Rubric
from ..metric_pool import MATCH_THRESHOLD, STARTER_DIR, as_data, find_rubric, list_rubrics, match_texts, save_rubric
from ..metric_pool import semantic_scores, slug
from ..models import NamedModel
from .asking import ask_agent


def tidy_rubric(
    r: Rubric, *, default_source: str, taken: Iterable[str] = (), cite: Iterable[str] = (), name: str | None = None
) -> Rubric:
    """Rubric from an agent made safe to run: slug name (``name`` when given) not in ``taken``, tasks ["*"] if none, a
    source citing ``cite`` (``default_source`` when empty)."""
    name = slug(name or r.name)
    if name in taken:
        name = f"{name}_custom"
    source = (r.source or "").strip() or default_source
    source = "; ".join([source, *(c for c in cite if c not in source)])
    return r.model_copy(
        update={"name": name, "tasks": r.tasks or ["*"], "source": source, "kind": "rubric", "range": (0.0, 100.0)}
    )


DRAFT_SYSTEM = """You formalise a quality of scientific answers as a rubric for sgieval.
Give 4-6 criteria; each has a short name, a one-sentence description and anchors for scores 0, 5 and 10.
Weights default to 1 (say otherwise only when asked). Aggregation is the weighted mean of the 0-10 criterion
scores x 10 (0-100). `tasks` is ["*"]. Put your citations (documents, URLs, papers) in `source`.
A criterion scored by checking a cited fact or reference has `needs: ["web_search"]`, one that needs a computation or
code re-run `needs: ["run_python"]`; any other criterion has no `needs` (the judge scores it from the response alone)."""


async def draft_rubric(
    quality: str, agent: NamedModel, *, request: str = "", documents: list[dict[str, Any]] | None = None,
    name: str | None = None,
) -> tuple[Rubric | None, list[str], str | None]:  # fmt: skip
    """Ask ``agent`` for a :class:`Rubric` measuring ``quality``, citing ``documents``: (rubric or None, raw, error)."""
    docs = documents or []
    parts = [f"Quality to measure: {quality}", f"Metric name: {slug(name or quality)}"]
    parts += [f"User request: {request}"] * bool(request)
    parts += [f"Document {d['path']} ({d['title']}):\n{as_data(d['text'], 'DOCUMENT')}" for d in docs]
    reply = await ask_agent(
        agent, [SystemMessage(content=DRAFT_SYSTEM), HumanMessage(content="\n\n".join(parts))], Rubric
    )
    if reply.parsed is None:
        return None, reply.raw, reply.error
    cite = [f"{d['path']} ({d['title']})" for d in docs]
    r = tidy_rubric(reply.parsed, default_source=f"drafted by {agent.name} for '{quality}'", cite=cite, name=name)
    return r, reply.raw, None


_FILLER = re.compile(
    r"^(?:(?:i|we)\s+(?:want|need|would like)\s+|(?:a|an|the|my|our|some|new)\s+|(?:custom\s+)?(?:metric|rubric|score|"
    r"measure|criterion|criteria)s?\s+|(?:that|which|to)\s+|(?:for|of|on|about|in|by)\s+|(?:measures?|measuring|"
    r"scores?|scoring|rates?|rating|evaluates?|evaluating|checks?|checking|judges?|judging|assess(?:es|ing)?)\s+|"
    r"(?:how|whether|if)\s+(?:well\s+|much\s+)?|(?:the\s+)?(?:model'?s?|responses?|answers?|ideas?|proposals?)\s+"
    r"(?:is|are|shows?|has|have|gives?|uses?|includes?)?\s*|(?:is|are|be)\s+|"
    r"(?:(?:research|scientific|proposed|generated)\s+)?(?:ideas?|responses?|answers?|proposals?|plans?|outputs?)\s+"
    r"(?:states?|gives?|proposes?|includes?|provides?|presents?|makes?|offers?|contains?)\s+)+",
    re.I,
)
_GENERIC = [  # (name, description, anchors 0, 5, 10)
    ("correctness", "Statements, numbers and conclusions are correct.", "Mostly wrong.",
     "Partly correct, with notable errors.", "Fully correct."),
    ("completeness", "Every part of the task is addressed.", "Most of the task is ignored.",
     "Main parts addressed, some missing.", "Every part addressed in depth."),
    ("justification", "Claims are supported with reasoning, evidence or references.", "Unsupported assertions.",
     "Some support, with gaps.", "Every claim is well supported."),
    ("clarity", "The response is clear and well organised.", "Confusing.", "Understandable with effort.",
     "Clear and well organised."),
]  # fmt: skip


def key_phrases(description: str, limit: int = 4) -> list[str]:
    """Up to ``limit`` 1-5 word phrases naming what ``description`` measures, split at punctuation and conjunctions,
    filler stripped: "A metric for cost awareness and use of cheap reagents" -> ["cost awareness", "use of ..."]."""
    out: list[str] = []
    for part in re.split(r"[,;:.!?()]|\b(?:and|or|with|plus|as well as|including)\b", description or "", flags=re.I):
        p = _FILLER.sub("", part.strip()).strip(" -'\"").lower()
        p = re.sub(r"\s+", " ", p)
        if p and 1 <= len(p.split()) <= 5 and re.search(r"[a-z]", p) and p not in out:
            out.append(p)
    return out[:limit]


_VERBS = tuple(
    "states gives estimates includes provides proposes describes explains considers uses has contains discusses "
    "identifies addresses mentions offers presents defines reports cites quantifies justifies compares lists avoids "
    "follows".split()
)


def _base_form(verb: str) -> str:
    """The base form of a third-person-singular verb of :data:`_VERBS` ("identifies" -> "identify")."""
    if verb == "has":
        return "have"
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    return verb[:-2] if verb.endswith(("sses", "shes", "ches", "xes")) else verb[:-1]


def drafted_criterion(phrase: str, weight_note: str = "") -> Criterion:
    """An offline criterion for ``phrase`` with anchors at 0, 5, 10: a verb phrase ("estimates its cost") is checked as
    an action, any other ("testable hypothesis") as something the response must contain."""
    p = phrase.strip()
    first = p.split()[0].lower() if p.split() else ""
    if first in _VERBS:
        desc = (
            f"Checks whether the response {p}, explicitly and specifically, and whether that part is correct "
            "and supported by reasoning or evidence."
        )
        anchors = {
            0: f"The response does not {_base_form(first)}"
            f"{' ' + ' '.join(p.split()[1:]) if len(p.split()) > 1 else ''}.".replace("  ", " "),
            5: "It does so only vaguely, partly or without support.",
            10: "It does so explicitly, specifically and with sound support.",
        }
    else:
        art = "an" if p[:1].lower() in "aeiou" else "a"
        desc = (
            f"Checks whether the response contains {art} {p} that is stated explicitly, is specific enough to "
            "act on or test, and is supported by reasoning or evidence."
        )
        anchors = {
            0: f"No {p} in the response.",
            5: f"{art.capitalize()} {p} is present but vague, partial or unsupported.",
            10: f"{art.capitalize()} {p} is explicit, specific and well supported.",
        }
    needs = [tool for tool, words in _NEEDS_WORDS if words.search(p)]  # the tools the phrase's words ask for
    return Criterion(name=p, description=desc + weight_note, anchors=anchors, needs=needs)


_NEEDS_WORDS: tuple[tuple[CriterionTool, re.Pattern[str]], ...] = (
    (
        "web_search",
        re.compile(r"\b(?:cit(?:e|es|ed|ing|ation|ations)|references?|sources?|facts?|fact-check\w*)\b", re.I),
    ),
    (
        "run_python",
        re.compile(r"\b(?:code|computations?|calculations?|computes?|calculates?|simulations?|numerical\w*)\b", re.I),
    ),
)


def generic_rubric(description: str, name: str | None = None) -> Rubric:
    """A 4-criterion rubric: one per key phrase of ``description``, filled up from correctness, completeness, ..."""
    phrases = key_phrases(description)
    crits: list[Criterion] = [drafted_criterion(p) for p in phrases]  # at most 4 (key_phrases' limit)
    taken = {c.name for c in crits}
    generic = [Criterion(name=n, description=d, anchors={0: a0, 5: a5, 10: a10}) for n, d, a0, a5, a10 in _GENERIC]
    crits += [c for c in generic if c.name not in taken][: 4 - len(crits)]
    metric = slug(name or (phrases[0] if phrases else "custom_metric"))
    source = "user (sgieval metric define, generic rubric from the description)"
    return Rubric(name=metric, tasks=["*"], description=(description or metric).strip(), criteria=crits, source=source)


def _best_library_match(description: str) -> tuple[Rubric | None, float]:
    """(library rubric, cosine) best matching ``description`` or a key phrase; (None, cosine) below MATCH_THRESHOLD."""
    library = list_rubrics()
    exact = find_rubric(description, threshold=2.0, rubrics=library)
    if exact is not None:
        return exact, 1.0
    queries = [description] + key_phrases(description)
    scored = ((r, max(max(semantic_scores(q, match_texts(r))) for q in queries)) for r in library)
    best, sim = max(scored, key=lambda x: x[1], default=(None, -1.0))
    return (best, sim) if sim >= MATCH_THRESHOLD else (None, sim)


PROPOSE_SYSTEM = """You help a researcher define an evaluation metric as a rubric for sgieval.
Draft a rubric from their description: a snake_case name, a one-sentence description, 4-6 criteria (short name,
one-sentence description, anchors for scores 0, 5 and 10), weights (1 unless the user asks otherwise),
tasks ["*"], and a `source` ("user" plus any document or paper the description names).
A criterion scored by checking a cited fact or reference has `needs: ["web_search"]`, one that needs a computation or
code re-run `needs: ["run_python"]`; leave `needs` out for the others.
Aggregation is fixed: weighted mean of the 0-10 criterion scores x 10 (0-100)."""

REVISE_SYSTEM = """You revise an sgieval rubric as the researcher asks. Change only what they ask for; keep every other
criterion, anchor and weight as it is. Reply with the whole revised rubric."""


async def propose_rubric(
    description: str, *, agent: NamedModel | None = None, name: str | None = None
) -> tuple[Rubric, str]:
    """The first rubric for a metric described in plain language: the agent's draft, else the best-matching library
    rubric, else :func:`generic_rubric`.

    Args:
        description: what the metric should measure.
        agent: the LLM that drafts it; None: offline.
        name: the metric's name.

    Returns:
        ``(rubric, message to the user)``.

    Raises:
        InputError: an empty description.
    """
    if not (description or "").strip():
        raise InputError(
            "the metric description is empty",
            what="metric description",
            fix="describe what the metric should measure, e.g. 'how rigorous a research idea is'",
        )
    fallback = ""
    if agent is not None:
        msg = f"Description: {description}" + (f"\nMetric name: {slug(name)}" if name else "")
        reply = await ask_agent(agent, [SystemMessage(content=PROPOSE_SYSTEM), HumanMessage(content=msg)], Rubric)
        if reply.parsed is not None:
            r = tidy_rubric(reply.parsed, default_source="user (sgieval metric define)", name=name)
            return r, f"{agent.name} drafted the rubric {r.name} with {len(r.criteria)} criteria."
        fallback = f"{agent.name} gave no usable rubric ({reply.error}); "
    hit, sim = _best_library_match(description)
    if hit is not None:
        r = hit.model_copy(update={"name": slug(name) if name else hit.name}, deep=True)
        start = f"Starting from the library rubric {hit.name} (match {sim:.2f}) with {len(r.criteria)} criteria."
        return r, fallback + start
    r = generic_rubric(description, name)
    return r, (
        f"{fallback}No library rubric matches (best {sim:.2f}); a generic rubric with "
        f"{len(r.criteria)} criteria was built from your description."
    )


DONE_RE = re.compile(
    r"^\s*(?:done|save(?: it)?|finish(?:ed)?|that'?s (?:it|all)|looks good|ok(?:ay)?|lgtm|yes|y)\s*[.!]*\s*$", re.I
)
CANCEL_RE = re.compile(r"^\s*(?:cancel|quit|exit|abort|q)\s*[.!]*\s*$", re.I)

_FACTORS = {"double": 2.0, "twice": 2.0, "triple": 3.0, "thrice": 3.0, "half": 0.5, "halve": 0.5}
_NUM = r"(\d+(?:\.\d+)?)"
_REVISIONS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern, re.I))
    for kind, pattern in [
        (
            "add",
            r"^add\s+(?:an?\s+)?(?:new\s+)?(?:criterion|criteria)\s+"
            r"(?:(?:about|for|on|covering|named|called)\s+)?"
            r"(?:[\"'\u201c\u2018](?P<q>[^\"'\u201d\u2019]+)[\"'\u201d\u2019]|(?P<c>[^:\"'(]+?))"
            rf"(?:\s*,?\s*\(?\s*(?:with\s+)?(?:an?\s+)?weight(?:ed)?\s*(?:of|=|:|at)?\s*(?P<w>{_NUM})\s*\)?)?"
            r"(?:\s*[:\-=]\s*(?P<d>.+))?$",
        ),
        (
            "factor",
            rf"^(?:weigh|weight|count|make)\s+(?:the\s+)?(?P<c>.+?)\s+(?:count\s+)?(?:as\s+)?"
            rf"(?P<f>double|twice|triple|thrice|half|x\s*{_NUM}|{_NUM}\s*x|{_NUM}\s+times)(?:\s+as much)?$",
        ),
        (
            "factor",
            r"^(?P<f>double|triple|halve)\s+(?:the\s+)?(?:weight\s+(?:of|for)\s+)?(?:the\s+)?(?P<c>.+?)"
            r"(?:'s)?(?:\s+weight)?$",
        ),
        ("factor", r"^(?P<c>.+?)\s+(?:counts?|weighs?|weighted)\s+(?P<f>double|twice|triple|thrice|half)$"),
        (
            "set",
            rf"^(?:set\s+|give\s+)?(?:the\s+)?weight\s+(?:of|for)\s+(?:the\s+)?(?P<c>.+?)\s*(?:to|=|:|at)\s*(?P<w>{_NUM})$",
        ),
        (
            "set",
            rf"^(?:set\s+|give\s+)?(?:the\s+)?(?P<c>.+?)(?:'s)?\s+(?:a\s+)?weight\s*(?:to|=|:|of|at)?\s*(?P<w>{_NUM})$",
        ),
        ("drop", r"^(?:drop|remove|delete)\s+(?:the\s+)?(?:criterion\s+)?(?P<c>.+?)(?:\s+criterion)?$"),
        ("rename", r"^(?:rename|call|name)\s+(?:it|the metric|the rubric|this)?\s*(?:to|as)?\s+(?P<n>[\w\- ]+)$"),
    ]
]


def match_criterion(rubric: Rubric, phrase: str) -> str | None:
    """The criterion ``phrase`` names (exact, containment, 6-letter stems, then MiniLM >= MATCH_THRESHOLD) or None."""

    def norm(x: str) -> str:
        return re.sub(r"[^a-z0-9]+", " ", x.lower()).strip()

    q = re.sub(r"^(?:the\s+)?(?:criterion\s+)?", "", norm(phrase))
    names = [c.name for c in rubric.criteria]
    exact = next((n for n in names if norm(n) == q), None)
    if exact is not None or not q:
        return exact
    words = q.split()
    for same in (
        lambda n: q in n or n in q,
        lambda n: all(any(len(w) >= 5 and len(x) >= 5 and w[:6] == x[:6] for x in n.split()) for w in words),
    ):
        if (hit := next((n for n in names if same(norm(n))), None)) is not None:
            return hit
    sims = semantic_scores(phrase, names)
    i = max(range(len(names)), key=lambda k: sims[k])
    return names[i] if sims[i] >= MATCH_THRESHOLD else None


REVISION_HELP = (
    "Try: 'weigh X double', 'X weight 2', 'drop X', 'add criterion X: description', "
    "'add a criterion \"X\" with weight 2', 'rename to NAME' (several at once: join them with 'and' "
    "or ';'), or 'done' to save."
)
PHRASINGS = (
    "Changes you can ask for (offline): 'weigh X double' | 'X weight 2' | 'set the weight of X to 0.5' | "
    "'drop X' | 'add criterion X: what it checks' | 'add a criterion \"X\" with weight 2' | 'rename to NAME'; "
    "join several with 'and' or ';'. 'done' saves, 'cancel' quits."
)

_SPLIT = re.compile(
    r"[;\n]+|\.\s+|,?\s+\band\s+(?=(?:then\s+|also\s+)?(?:add|remove|drop|delete|weigh|weight|set|"
    r"give|rename|call|name|double|triple|halve|make|count)\b)",
    re.I,
)
_NOT_A_NAME = re.compile(r"\b(?:and|weight|weigh|remove|drop|delete|rename|add|set|double|with)\b", re.I)


def split_revisions(request: str) -> list[str]:
    """The single changes in ``request``, split at ";", new lines, sentence ends and "and" before a change verb."""
    text = request or ""
    quoted: list[str] = []

    def hide(m: re.Match[str]) -> str:
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    masked = re.sub(r"[\"\u201c][^\"\u201d]*[\"\u201d]", hide, text)
    parts = [re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], p) for p in _SPLIT.split(masked)]
    return [p.strip(" .!") for p in parts if p and p.strip(" .!")]


def revise_offline(rubric: Rubric, request: str) -> tuple[Rubric, str]:
    """Apply the changes ``request`` asks (see :data:`PHRASINGS`) -> (revised rubric, message); one not understood
    changes nothing and the message lists the forms."""
    r = rubric.model_copy(deep=True)
    done: list[str] = []
    last: str | None = None  # the criterion "it" refers to
    for part in split_revisions(request):
        part = re.sub(r"^(?:please|and|also|then)\s+", "", part, flags=re.I).strip()
        kind, m = next(((k, pat.match(part)) for k, pat in _REVISIONS if pat.match(part)), ("", None))
        if m is None:
            done.append(f"I did not understand '{part}'. {REVISION_HELP}")
        elif kind == "rename":
            new = slug(m.group("n"))
            done.append(f"renamed {r.name} -> {new}")
            r = r.model_copy(update={"name": new})
        else:
            r, said, last = _add_criterion(r, m, part, last) if kind == "add" else _change_criterion(r, kind, m, last)
            done.append(said)
    text = "; ".join(d.rstrip(".") if i < len(done) - 1 else d for i, d in enumerate(done))
    return r, text if text.endswith(".") else text + "."


def _add_criterion(r: Rubric, m: re.Match[str], part: str, last: str | None) -> tuple[Rubric, str, str | None]:
    """(rubric, message, criterion "it" names) after an "add criterion" revision."""
    cname = re.sub(r"\s+", " ", (m.group("q") or m.group("c") or "").strip().strip("'\"").lower())
    if not m.group("q") and (len(cname.split()) > 6 or _NOT_A_NAME.search(cname)):
        said = (
            f"I did not understand '{part}' (which words name the criterion?); put the name in "
            f"quotes: add a criterion \"name\" with weight 2. {REVISION_HELP}"
        )
        return r, said, last
    same = match_criterion(r, cname)
    if same and re.sub(r"\W+", " ", cname) == re.sub(r"\W+", " ", same):
        return r, f"criterion '{cname}' already exists", last
    crit = drafted_criterion(cname)
    if m.group("d"):
        crit = crit.model_copy(update={"description": m.group("d").strip()})
    w = float(m.group("w")) if m.group("w") else 1.0
    data = r.model_dump()
    try:
        r = Rubric.model_validate(
            {**data, "criteria": [*data["criteria"], crit.model_dump()], "weights": {**r.weights, cname: w}}
        )
    except ValueError as e:
        return r, f"criterion '{cname}' not added: {str(e).splitlines()[0]}", last
    return r, f"added criterion '{cname}' (weight {w:g})", cname


def _change_criterion(r: Rubric, kind: str, m: re.Match[str], last: str | None) -> tuple[Rubric, str, str | None]:
    """(rubric, message, criterion "it" names) after a "drop", "factor" or "set" revision."""
    said = m.group("c").strip().lower()
    it = ("it", "this", "that", "this criterion", "that criterion", "the new one")
    cname = last if said in it else match_criterion(r, m.group("c"))
    if cname is None:
        return r, f"no criterion matches '{m.group('c')}' (criteria: {', '.join(c.name for c in r.criteria)})", last
    if kind == "drop":
        if len(r.criteria) == 1:
            return r, f"cannot drop '{cname}': it is the only criterion", last
        criteria = [c.model_dump() for c in r.criteria if c.name != cname]
        weights = {k: v for k, v in r.weights.items() if k != cname}
        r = Rubric.model_validate({**r.model_dump(), "criteria": criteria, "weights": weights})
        return r, f"dropped '{cname}'", last
    old = r.weights[cname]
    if kind == "factor":
        f = m.group("f").lower()
        num = re.search(_NUM, f)
        new_w = old * _FACTORS.get(f, float(num.group(1)) if num else 1.0)
    else:
        new_w = float(m.group("w"))
    try:
        r = Rubric.model_validate({**r.model_dump(), "weights": {**r.weights, cname: new_w}})
    except ValueError as e:
        return r, f"weight of '{cname}' not changed: {str(e).splitlines()[0]}", last
    return r, f"weight of '{cname}' {old:g} -> {new_w:g}", cname


async def revise_rubric(rubric: Rubric, request: str, *, agent: NamedModel | None = None) -> tuple[Rubric, str]:
    """Revise ``rubric`` as ``request`` asks: by ``agent`` (the whole rubric back), else or on failure offline.

    Args:
        rubric: the current rubric.
        request: the change asked for, in plain language.
        agent: the LLM that revises it; None: offline.

    Returns:
        ``(revised rubric, message to the user)``.
    """
    if agent is None:
        return revise_offline(rubric, request)
    msg = f"Current rubric (YAML):\n{rubric.to_yaml()}\nRequested change: {request}"
    reply = await ask_agent(agent, [SystemMessage(content=REVISE_SYSTEM), HumanMessage(content=msg)], Rubric)
    if reply.parsed is None:
        r, m = revise_offline(rubric, request)
        return r, f"{agent.name} gave no usable revision ({reply.error}); offline: {m}"
    r = tidy_rubric(reply.parsed, default_source=rubric.source or "user (sgieval metric define)")
    return r, f"{agent.name} revised the rubric ({len(r.criteria)} criteria)."


def save_defined_rubric(
    rubric: Rubric, *, name: str | None = None, folder: str | Path | None = None
) -> tuple[Path, str]:
    """Save the rubric ``sgieval metric define`` agreed on; an edited starter rubric is saved as ``<name>_custom``
    unless the user gave ``name`` (then it replaces the starter, and the note says so).

    Args:
        rubric: the rubric.
        name: the name the user gave (``--name``).
        folder: where the YAML goes (default: the user rubric folder, $SGIEVAL_RUBRIC_DIR).

    Returns:
        ``(path of <name>.yaml, note for the user)``; the note is "" unless a starter was involved.
    """
    note = ""
    starter = STARTER_DIR / f"{slug(rubric.name)}.yaml"
    if starter.is_file() and Rubric.from_yaml(starter) != rubric:
        if name is None:
            new_name = f"{rubric.name}_custom"
            note = f" (as {new_name}: {rubric.name} is a starter rubric; --name chooses the name)"
            rubric = rubric.model_copy(update={"name": new_name})
        else:
            note = f" (it replaces the starter rubric {rubric.name} in every later run; delete the file to undo)"
    return save_rubric(rubric, user=True, folder=folder), note
