"""The kind of question a request asks (:data:`KINDS`), which decides the Answer's first item: by the offline
:data:`RULES` or the questioning agent's label; one none recognises is a ranking (:data:`NOT_RECOGNISED`)."""

from __future__ import annotations

import re

from ..reports import WHERE_REQUEST, named_models

KINDS = {  # label -> what the question asks (the Run table's words)
    "ranking": "which model is best",
    "where": "where the models disagree",
    "yes_no": "is one named model better than another",
    "how_good": "how good one model is",
    "how_much": "how large the difference is",
    "why": "which criteria or items drive the result",
}

NOT_RECOGNISED = "asked kind not recognised; answered as a ranking"

_COMPARE = r"\b(?:better|worse|higher|lower|more|less|stronger|weaker|beats?|outperforms?|\w+er\s+than|than)\b"
# the offline rules, tried in order (the first match names the kind); a request that is not a question is a ranking
RULES: list[tuple[str, re.Pattern[str]]] = [
    ("why", re.compile(r"\bwhy\b|\bwhat\s+(?:makes|drives|explains)\b|\bwhich\s+criteri", re.I)),
    (
        "how_much",
        re.compile(
            r"\bhow\s+much\b|\bhow\s+(?:large|big|wide)\s+is\s+the\s+(?:gap|difference|lead)|"
            r"\beffect\s+size\b|\bby\s+how\s+much\b",
            re.I,
        ),
    ),
    ("where", WHERE_REQUEST),
    ("yes_no", re.compile(rf"^\s*(?:is|are|does|do|did|was|can|has)\b.*{_COMPARE}", re.I)),
    (
        "how_good",
        re.compile(
            r"\bhow\s+(?:good|well|bad|accurate|strong|capable|creative|rigorous)\b|"
            r"^\s*(?:is|are|does|was|can)\b",
            re.I,
        ),
    ),
    (
        "ranking",
        re.compile(
            r"\b(?:which|who|best|worst|most|least|top|rank\w*|compare\w*|leader\w*|versus|vs)\b|"
            r"^(?!\s*(?:what|when|how|why|where|whom?|whose|is|are|do|does|can)\b)[^?]*$",
            re.I,
        ),
    ),
]


def classify(request: str, models: list[str] | None = None) -> tuple[str, str]:
    """The question kind of ``request`` by the offline rules (a yes/no question must name a model, else a ranking).

    Args:
        request: the request ("" is a ranking of everything).
        models: the model strings the run knows (targets, stored models).

    Returns:
        ``(kind, note)``: a label of :data:`KINDS`; the note is :data:`NOT_RECOGNISED` when no rule matched.
    """
    text = (request or "").strip()
    if not text:
        return "ranking", ""
    named = named_models(text, models or [])
    for kind, rule in RULES:
        if rule.search(text) and (kind != "yes_no" or named):
            return kind, ""
    return "ranking", NOT_RECOGNISED


def agent_kind(label: str | None, request: str, models: list[str] | None = None) -> tuple[str, str]:
    """The kind an agent model gave (a label of :data:`KINDS`); no label: the offline rules'.

    Args:
        label: the agent's label ("" or None: it gave none).
        request: the request.
        models: the model strings the run knows.

    Returns:
        ``(kind, note)``: an unknown label is a ranking with :data:`NOT_RECOGNISED`.
    """
    label = (label or "").strip().lower().replace("/", "_").replace("-", "_").replace(" ", "_")
    if not label:
        return classify(request, models)
    return (label, "") if label in KINDS else ("ranking", NOT_RECOGNISED)


def kind_line(kind: str, note: str = "", by: str = "offline rules") -> str:
    """The Run table's "question kind" value, e.g. ``yes_no (is one named model better than another; offline rules)``.

    Args:
        kind: a label of :data:`KINDS`.
        note: :data:`NOT_RECOGNISED` or "".
        by: who classified the request.

    Returns:
        The text.
    """
    return f"{kind} ({'; '.join(x for x in (KINDS.get(kind, ''), by, note) if x)})"
