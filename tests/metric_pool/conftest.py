"""Fixtures of the metric-pool tests."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _fresh_protocol_parse_caches():
    """Each test parses its protocols afresh: the wet-experiment parsers are lru-cached by text, so without this a
    test would see the parse of an earlier test (and a mutation-testing worker forked after the test-coverage pass,
    bench/mutation.py, the parse of the unmutated code)."""
    wet = sys.modules.get("sgieval.metric_pool.sgi.wet_experiment")
    if wet is not None:
        wet.parse_protocol.cache_clear()
        wet.parse_protocol_code.cache_clear()
    yield
