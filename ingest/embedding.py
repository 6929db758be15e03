"""Static word and sentence vectors for tool-argument text, loaded offline from wordllama's wheel.

The model is `wordllama <https://pypi.org/project/wordllama/>`_ 0.4.0's bundled
``l2_supercat`` codebook: one 256-dimension vector per Llama-2 token (32,000 × 256 float16,
16 MB in the wheel) and the Llama-2 tokenizer. A text's vector is the mean of its tokens'
vectors; the codebook is matryoshka-trained, so its first :data:`DIMS` columns are a smaller
model of their own (docs/detection.md, "Measured precision and recall": all 256 columns
find fewer of the labelled corpus's repeats than the first 64 at the same thresholds).

wordllama is never imported: ``import wordllama`` calls ``logging.basicConfig(level=INFO)``
on the host's root logger, and ``WordLlama.load()`` without a ``cache_dir`` makes an
un-timed request to huggingface.co for a tokenizer the wheel ships under another folder
name. Here the wheel's two files are located with :func:`importlib.util.find_spec` (which
does not run the package) and read with ``safetensors`` and ``tokenizers``; nothing touches
the network. The package is only the carrier of the weights (an optional extra); without it
:func:`default_model` returns ``None`` and the caller falls back to lexical features.

Text is lower-cased first (the codebook is case-sensitive: "Weather in Paris" / "weather in
paris" have cosine 0.59 cased). Word vectors are cached per process, so a word costs the
tokenizer once; :meth:`WordVectors.text` is cached by text.

Example:
    >>> model = default_model()
    >>> model is None or round(float(model.text("cheap flights london to tokyo")
    ...     @ model.text("cheapest flight from london to tokyo")), 1) >= 0.7
    True
    >>> model is None or model.word("paris").shape == (DIMS,)
    True
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is only needed when the model is installed
    import numpy as np

DIMS = 64
"""Columns of the codebook kept (matryoshka truncation of the 256-d model)."""
WEIGHTS = ("weights", "l2_supercat_256.safetensors")
TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
CACHE_LIMIT = 50_000
"""Cached words (and, separately, texts) before a cache is emptied: ~13 MB of 64-d vectors each."""

_lock = threading.Lock()
_default: WordVectors | None = None
_default_loaded = False


def model_files(package: str = "wordllama") -> tuple[Path, Path] | None:
    """The weights and tokenizer files inside the installed wheel, or ``None`` when absent.

    Found without importing the package (no logging side effect, no network).

    Example:
        >>> files = model_files()
        >>> files is None or all(p.is_file() for p in files)
        True
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    weights, tokenizer = root.joinpath(*WEIGHTS), root.joinpath(*TOKENIZER)
    if not (weights.is_file() and tokenizer.is_file()):
        return None
    return weights, tokenizer


class WordVectors:
    """Unit word vectors and mean-pooled text vectors from a token codebook.

    ``table`` is the (vocabulary × dims) float32 codebook, ``tokenizer`` a
    ``tokenizers.Tokenizer`` for it (no padding, no truncation, no special tokens).

    Example:
        >>> model = default_model()
        >>> model is None or abs(float(model.word("oslo") @ model.word("oslo")) - 1) < 1e-5
        True
    """

    def __init__(self, table: np.ndarray, tokenizer: object) -> None:
        import numpy as np

        self._np = np
        self.table = table
        self.dims = int(table.shape[1])
        self.tokenizer = tokenizer
        self._words: dict[str, np.ndarray] = {}
        self._texts: dict[str, np.ndarray] = {}
        self._zero = np.zeros(self.dims, np.float32)

    def token_ids(self, text: str) -> list[int]:
        """Token ids of lower-cased ``text`` (the tokenizer prepends the word-start marker itself)."""
        return list(self.tokenizer.encode(text.lower(), add_special_tokens=False).ids)  # type: ignore[attr-defined]

    def word(self, word: str) -> np.ndarray:
        """The unit vector of one word (mean of its tokens' vectors, L2-normalised), cached.

        A word tokenizes the same alone as inside a sentence (the tokenizer marks every word
        start, the first one included), so the vector of a text's word equals its vector here.
        """
        return self._pooled(word, self._words)

    def text(self, text: str) -> np.ndarray:
        """The unit vector of a text: the mean of all its tokens' vectors, L2-normalised (cached).

        This is wordllama's own pooling (the research report's figures); the detector itself
        uses :func:`ingest.features.text_features`, a sum of unit *word* vectors over content
        words, so that shared words cancel when two calls are compared.
        """
        return self._pooled(text, self._texts)

    def _pooled(self, text: str, cache: dict[str, np.ndarray]) -> np.ndarray:
        """The L2-normalised mean of ``text``'s token vectors (zero without tokens), kept in ``cache``.

        The table is float32, so the vector is too."""
        vector = cache.get(text)
        if vector is None:
            ids = self.token_ids(text)
            vector = self._zero
            if ids:
                # the sum, not the mean: the same direction, and numpy's mean costs ~30 µs a call
                v = self.table[ids[0]].copy() if len(ids) == 1 else self.table[ids].sum(axis=0)
                norm = float(self._np.sqrt(v @ v))
                if norm:
                    v /= norm
                    vector = v
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
            cache[text] = vector
        return vector

    def clear_caches(self) -> None:
        """Forget cached words and texts (benchmarks measure cache misses with it)."""
        self._words.clear()
        self._texts.clear()


def load(dims: int = DIMS, files: tuple[Path, Path] | None = None) -> WordVectors | None:
    """Load the codebook's first ``dims`` columns as float32 and the tokenizer; ``None`` when
    wordllama, ``safetensors`` or ``tokenizers`` is not installed.

    Takes ~0.2 s and ``32000 × dims × 4`` bytes (8 MB at 64 dims).

    Example:
        >>> model = load(dims=32)
        >>> model is None or model.dims == 32
        True
    """
    files = files or model_files()
    if files is None:
        return None
    try:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError:
        return None
    weights, tokenizer_file = files
    table = load_file(str(weights))["embedding.weight"]
    table = np.ascontiguousarray(table[:, :dims], dtype=np.float32)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return WordVectors(table, tokenizer)


def default_model() -> WordVectors | None:
    """The process-wide model at :data:`DIMS` dims, loaded once on first use (``None`` if absent).

    Example:
        >>> default_model() is default_model()
        True
    """
    global _default, _default_loaded
    if not _default_loaded:
        with _lock:
            if not _default_loaded:
                _default = load()
                _default_loaded = True
    return _default
