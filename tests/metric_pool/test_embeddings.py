"""Tests of metric_pool/embeddings.py with the real offline MiniLM (no network)."""

import numpy as np
import pytest

from sgieval.core import InputError
from sgieval.metric_pool.embeddings import Embedder, cosine_matrix, get_embedder


def test_cosine_matrix_hand_values():
    # a = [[3,4],[0,0]], b = [[1,0],[0,2]]
    # row norms a: 5, 0 -> 1 (zero norm replaced by 1); b: 1, 2
    # cos(a0,b0) = 3/5 = 0.6; cos(a0,b1) = 8/(5*2) = 0.8; zero row -> 0, 0
    m = cosine_matrix(np.array([[3.0, 4.0], [0.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
    assert m.shape == (2, 2)
    assert m.ravel().tolist() == pytest.approx([0.6, 0.8, 0.0, 0.0])


def test_cosine_matrix_1d_and_mismatch():
    assert cosine_matrix([1.0, 0.0], [[0.0, 1.0], [2.0, 0.0]]).ravel().tolist() == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError, match="dimension mismatch 2 vs 3"):
        cosine_matrix([[1.0, 0.0]], [[1.0, 0.0, 0.0]])


def test_get_embedder_cached_and_unknown():
    assert get_embedder("minilm") is get_embedder()
    assert get_embedder().name == "minilm"
    with pytest.raises(InputError, match="unknown embedding model 'bert'"):
        get_embedder("bert")


def test_openai_embedder_constructs_offline(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    e = Embedder("openai:text-embedding-3-large")
    assert e.name == "openai:text-embedding-3-large"
    assert e._model.model == "text-embedding-3-large"


def test_minilm_real_encoding():
    e = get_embedder("minilm")
    texts = ["cat sits on mat", "a cat is sitting on a mat", "quantum chromodynamics", "cat sits on mat"]
    v = e.encode(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.linalg.norm(v, axis=1) == pytest.approx([1.0] * 4, abs=1e-5)
    c = cosine_matrix(v, v)
    assert c[0, 3] == pytest.approx(1.0, abs=1e-5)  # identical sentences
    assert c[0, 1] > c[0, 2]  # paraphrase closer than an unrelated topic
    assert c[0, 1] > 0.8 and c[0, 2] < 0.2
    # batched and one-at-a-time give the same vectors
    one = np.vstack([e.encode([t]) for t in texts])
    assert np.abs(one - v).max() < 1e-4
    assert e.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="text 1 is int, not str"):
        e.encode(["ok", 3])  # type: ignore[list-item]
