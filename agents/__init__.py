"""agents: the four agents (questioning, customisation, evaluation, reporting narrative), each a step ``(state, run
context) -> state update`` (run.py), the run context (runtime.py) and the executors.  What other folders may use loads
lazily from its module on first use (DESIGN.md "Adding things")."""

from __future__ import annotations

from ..core import lazy_exports

_PUBLIC: dict[str, str] = {  # public name -> the module of this folder that defines it
    "CANCEL_RE": "rubric_authoring",
    "DONE_RE": "rubric_authoring",
    "propose_rubric": "rubric_authoring",
    "revise_rubric": "rubric_authoring",
    "save_defined_rubric": "rubric_authoring",
    "PHRASINGS": "rubric_authoring",
    "NamedModel": "rubric_authoring",  # the agent model's type, for the graphs that hand one to an agent
    "RunContext": "runtime",
    "confirmation": "run",
    "check_until_settled": "run",
    "customisation_step": "run",
    "evaluation_step": "run",
    "make_runtime": "runtime",
    "new_run_id": "runtime",
    "questioning_step": "run",
    "reporting_step": "run",
    "reading_scope": "runtime",
    "run_scope": "runtime",
    "metric_specs": "run_report",
    "report_run": "run_report",
    "RunInput": "compare",
    "compare_runs": "compare",
    "MetricNeeds": "requirements",
    "check_request_models": "runtime",
    "load_ledger": "runtime",
    "models_named_in": "targets",
    "resolve_run_model": "stored_responses",
    "estimate_step": "estimate",
    "into_config": "into",
    "into_update": "into",
    "check_added_judges": "into",
}

__all__ = sorted(_PUBLIC)


__getattr__ = lazy_exports(__name__, _PUBLIC)
