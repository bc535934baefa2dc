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


@pytest.mark.minilm
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


# ------------------------------------------------ Long texts are embedded whole
OPENING = " ".join(f"Step {k}: the catalyst lowers the activation energy of reaction number {k}." for k in range(40))


def test_pooling_weights_pieces_by_length():
    e = Embedder("minilm")
    v = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]], dtype=np.float32)
    # text 0 = pieces of 3 and 1 characters: (3*(1,0) + 1*(0,1)) / 4 = (0.75, 0.25) -> unit (0.9487, 0.3162)
    out = e._pool(v, [0, 0, 1], ["abc", "d", "xy"], 2, normalize=True)
    assert out[0] == pytest.approx([0.75 / np.hypot(0.75, 0.25), 0.25 / np.hypot(0.75, 0.25)], abs=1e-6)
    assert out[1] == pytest.approx([0.0, 1.0])
    raw = e._pool(v, [0, 0, 1], ["abc", "d", "xy"], 2, normalize=False)
    assert raw[0] == pytest.approx([0.75, 0.25]) and raw[1] == pytest.approx([0.0, 2.0])
    with pytest.raises(InputError, match="unknown long-text mode 'drop'"):
        Embedder("minilm", long_texts="drop")


@pytest.mark.slow
def test_long_answers_sharing_their_opening_are_told_apart():
    chunked, truncated = Embedder("minilm"), Embedder("minilm", long_texts="truncate")
    a = OPENING + " So the answer is photosynthesis in green algae."
    b = OPENING + " So the answer is the rusting of iron in seawater, a different process altogether."
    pieces = chunked._load().tokenizer([OPENING], add_special_tokens=False)["input_ids"][0]
    assert len(pieces) > 472  # longer than MiniLM's 256-token window
    nt = 1 - float(cosine_matrix(*truncated.encode([a, b]))[0, 0])
    nc = 1 - float(cosine_matrix(*chunked.encode([a, b]))[0, 0])
    # truncated, both read only the shared opening: identical vectors, novelty 0
    assert nt == pytest.approx(0.0, abs=1e-6)
    # embedded whole (two pieces each, mean-pooled): the different endings now count (about 1 - 0.9957)
    assert nc == pytest.approx(0.0043, abs=0.0005)
    assert (chunked.long_texts_seen, chunked.texts_seen) == (2, 2)
    # short texts are embedded exactly as before
    short = ["cat sits on mat", "quantum chromodynamics"]
    assert np.abs(chunked.encode(short) - truncated.encode(short)).max() < 1e-6
    assert (chunked.long_texts_seen, chunked.texts_seen) == (2, 4)
