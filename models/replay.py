"""Replay of stored responses: evaluate published outputs without calling a model.

Two stored formats:
- a SciAidanBench ``responses/<model>.json`` file (METRICS.md B.7): the answer
  records of each question are served whole, with their stored judge scores
  (coherence, embedding and LLM dissimilarity) in ``Response.metadata``;
- a JSONL file of ``{"item_id": ..., "text": ...}`` lines (optional
  ``"model"``), for any other benchmark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import InputError, Item, Response


def sciaidanbench_text(records: list[dict[str, Any]]) -> str:
    """All stored answers of a question as numbered text blocks."""
    return "\n\n".join(f"[{r.get('answer_num')}] {r.get('answer', '')}" for r in records)


@dataclass
class ReplayStore:
    """Stored responses of one model.

    ``model`` is the stored model name, ``source`` the file; ``by_question``
    (SciAidanBench) maps question text -> stored entry; ``by_item`` (JSONL)
    maps item id -> text.
    """

    model: str
    source: Path
    by_question: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_item: dict[str, str] = field(default_factory=dict)

    def respond(self, item: Item, model_name: str) -> Response:
        """The stored Response for ``item``, or a failed Response (status
        ``not_run``) saying the replay has no stored answer for it."""
        if item.id in self.by_item:
            text = self.by_item[item.id]
            resp = Response(item_id=item.id, model=model_name, text=text, latency_s=0.0,
                            metadata={"replay": str(self.source)})
            if not text.strip():  # D.10: an empty stored reply is flagged, not scored
                resp = resp.model_copy(update={"status": "empty", "error": "empty stored reply"})
            return resp.split_reasoning()  # D.8
        entry = self.by_question.get(item.metadata.get("question", item.prompt))
        if entry is not None:
            recs = entry["records"]
            accepted = [r.get("answer", "") for r in recs if r.get("stopping_condition") is None]
            return Response(item_id=item.id, model=model_name, text=sciaidanbench_text(recs), answer=accepted,
                            latency_s=0.0,
                            metadata={"replay": str(self.source), "records": recs, "temperature": entry["temperature"],
                                      "stored_model": self.model})
        return Response(item_id=item.id, model=model_name, status="not_run",
                        error=f"{model_name} has no stored response for item {item.id} in {self.source}")


def load_jsonl_replay(path: Path) -> ReplayStore:
    """A ReplayStore from a JSONL file of {"item_id", "text"} lines.
    Raises InputError naming file:line and field."""
    store = ReplayStore(model=path.stem, source=path)
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"line {n}: invalid JSON ({e.msg})", what=str(path),
                             fix='each line must be {"item_id": ..., "text": ...}') from e
        for f in ("item_id", "text"):
            if not isinstance(rec, dict) or not isinstance(rec.get(f), str):
                raise InputError(f"line {n}: missing string field {f!r}", what=str(path),
                                 fix='each line must be {"item_id": ..., "text": ...}')
        store.model = rec.get("model", store.model)
        store.by_item[rec["item_id"]] = rec["text"]
    return store


def sciaidanbench_stores(folder: Path) -> list[ReplayStore]:
    """One ReplayStore per model stored under ``folder/responses``."""
    from ..benchmarks.sciaidanbench import list_response_files, load_stored_answers

    stores = []
    for f in list_response_files(folder):
        for sa in load_stored_answers(f):
            stores.append(ReplayStore(model=sa.model, source=f, by_question=sa.by_question))
    return stores
