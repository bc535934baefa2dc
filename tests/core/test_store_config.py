"""RunStore.write_config replaces config.json atomically (the run rewrites it during evaluation)."""

from __future__ import annotations

import pytest


def test_config_rewrite_is_atomic(tmp_path, monkeypatch):
    # the run rewrites config.json during evaluation (sampling parameters sent): a failure half-way keeps the old one
    import os

    from sgieval.core import InputError, RunConfig, RunStore

    store = RunStore(tmp_path / "r")
    store.write_config(RunConfig(run_id="r", temperature=0.0), new=True)
    store.write_config(RunConfig(run_id="r", temperature=0.5))
    assert store.read_config().temperature == 0.5 and not [p for p in store.root.iterdir() if p.suffix == ".tmp"]

    def fail(src, dst, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(InputError) as ei:  # one line naming the file, not a bare OSError
        store.write_config(RunConfig(run_id="r", temperature=1.0))
    assert (
        str(ei.value) == f"{store.root / 'config.json'}: cannot write: disk full. Fix: check the folder's permissions"
    )
    assert store.read_config().temperature == 0.5
    assert not [p for p in store.root.iterdir() if p.suffix == ".tmp"]
