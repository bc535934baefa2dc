"""graphs: LangGraph wiring only: the evaluation graph (the run context travels as its ``context``) and the
metric-definition chat graph.  What other folders may use loads lazily from its module on first use."""

from __future__ import annotations

from ..core import lazy_exports

_PUBLIC: dict[str, str] = {  # public name -> the module of this folder that defines it
    "build_graph": "evaluate",
    "execute": "evaluate",
    "make_runtime": "evaluate",
    "new_run_id": "evaluate",
    "report_run": "evaluate",
    "open_saver": "checkpoints",
    "read_state": "checkpoints",
    "build_metric_chat": "metric_chat",
    "run_metric_chat": "metric_chat",
    "check_request_models": "evaluate",
    "into_run": "evaluate",
    "metric_specs": "evaluate",
}

__all__ = sorted(_PUBLIC)


__getattr__ = lazy_exports(__name__, _PUBLIC)
