"""No host variable (an API key above all) reaches model-written code.

Planted bug: the sandbox stops clearing the host environment.  Each backend runs a program that lists its
environment; the listing must be exactly the sandbox's own variables and the key must appear nowhere."""

from __future__ import annotations

import json

import pytest

from sgieval.tests.tools.sandboxes import needs_bwrap
from sgieval.tools.sandbox import BubblewrapSandbox, UnsafeLocalSandbox

SECRET = "sk-planted-secret-0123456789"
LIST_ENV = "import os, json; print(json.dumps(dict(os.environ), sort_keys=True))"
COMMON = [
    "HOME",
    "LANG",
    "LC_ALL",
    "MKL_NUM_THREADS",
    "MPLBACKEND",
    "MPLCONFIGDIR",
    "NUMEXPR_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "PATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "PYTHONNOUSERSITE",
    "PYTHONPATH",
    "TMPDIR",
]


@pytest.fixture
def host_secret(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("E2B_API_KEY", SECRET)
    monkeypatch.setenv("SGIEVAL_TEST_MARKER", SECRET)
    return SECRET


def _env_of(sbx) -> dict[str, str]:
    res = sbx.run(LIST_ENV, timeout_s=30)
    assert res.exit_code == 0, res.stderr
    assert SECRET not in res.stdout and SECRET not in res.stderr
    return json.loads(res.stdout)


@needs_bwrap
def test_bubblewrap_environment_is_exactly_the_sandbox_variables(host_secret):
    env = _env_of(BubblewrapSandbox(timeout_s=30))
    # bwrap --clearenv, then only --setenv'd variables; the shell-less chain adds PWD
    assert sorted(env) == sorted(COMMON + ["PWD"])
    assert env["HOME"] == "/sandbox" and env["PYTHONNOUSERSITE"] == "1"


def test_unsafe_local_environment_is_exactly_the_sandbox_variables(host_secret):
    env = _env_of(UnsafeLocalSandbox(timeout_s=30))
    assert sorted(env) == COMMON
