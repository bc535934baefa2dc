"""The evaluation's count of embedded texts reads the embeddings module only once it is fully imported: a module
another thread is still importing is already in ``sys.modules`` without its counter, and must count as (0, 0)
rather than end the run with an AttributeError (seen on a resumed --until-settled run)."""

from __future__ import annotations

import sys
import types

from sgieval.agents import evaluation


def test_a_module_still_being_imported_counts_as_nothing_embedded(monkeypatch):
    partial = types.ModuleType(evaluation._EMBEDDINGS)  # what sys.modules holds while its import runs
    monkeypatch.setitem(sys.modules, evaluation._EMBEDDINGS, partial)
    assert evaluation._embedded_so_far() == (0, 0)


def test_a_missing_module_counts_as_nothing_and_a_loaded_one_gives_its_counts(monkeypatch):
    monkeypatch.delitem(sys.modules, evaluation._EMBEDDINGS, raising=False)
    assert evaluation._embedded_so_far() == (0, 0)
    loaded = types.ModuleType(evaluation._EMBEDDINGS)
    loaded.embedding_counts = lambda: (7, 2)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, evaluation._EMBEDDINGS, loaded)
    assert evaluation._embedded_so_far() == (7, 2)
