"""RunStore.write_config replaces config.json atomically (the run rewrites it during evaluation)."""

from __future__ import annotations

import pytest


def test_config_rewrite_is_atomic(tmp_path, monkeypatch):
    # the run rewrites config.json during evaluation (sampling parameters sent): a failure half-way keeps the old one
    import os

    from sgieval.core import RunConfig, RunStore

    store = RunStore(tmp_path / "r")
    store.write_config(RunConfig(run_id="r", temperature=0.0), new=True)
    store.write_config(RunConfig(run_id="r", temperature=0.5))
    assert store.read_config().temperature == 0.5 and not [p for p in store.root.iterdir() if p.suffix == ".tmp"]

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        store.write_config(RunConfig(run_id="r", temperature=1.0))
    assert store.read_config().temperature == 0.5
