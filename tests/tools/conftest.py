"""Fixtures of the tool tests: the network switch and the offline search corpus (search and tool-pool tests)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture()
def offline(monkeypatch):
    monkeypatch.setenv("SGIEVAL_NETWORK", "offline")


@pytest.fixture()
def online(monkeypatch):
    monkeypatch.setenv("SGIEVAL_NETWORK", "online")


@pytest.fixture()
def corpus(tmp_path):
    """A corpus folder of four documents; every one has 4 tokens after stopword removal ("of" is a stopword), and
    "graphene" is in a.txt (3 times) and b.txt (once) only."""
    (tmp_path / "a.txt").write_text("graphene graphene graphene mobility")
    (tmp_path / "b.txt").write_text("graphene transport of holes electrons")
    (tmp_path / "c.md").write_text("# Protein\nfolding kinetics rates")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.jsonl").write_text(
        json.dumps({"id": "o1", "title": "Ocean", "text": "ocean salinity gradients currents"}) + "\n" + "{not json\n"
    )
    return tmp_path
