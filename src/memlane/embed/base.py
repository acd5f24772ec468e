"""The embedder protocol and the small helpers every embedder shares.

numpy is imported inside the helpers, not at module level, so that importing
``memlane.embed`` (e.g. for a type hint in the engine) costs nothing on a cold
CLI start that never embeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    #: A float32 matrix (n, d) or vector (d,).
    Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` is the model name; it is part of every chunk hash, so two
    embedders with the same name must produce interchangeable vectors.
    ``dimension`` is known from configuration or after the first call, else
    None.

    ``embed`` returns shape (n, d) with unit-length rows (a row whose raw
    vector is all zeros stays zero rather than becoming NaN). Empty input
    returns shape (0, d), or (0, 0) while d is still unknown, without
    touching the model. Failures raise ``EmbedderError``.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int | None: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vectors: ...


def empty_vectors(dimension: int | None) -> Vectors:
    """The (0, d) result of embedding nothing; (0, 0) while d is unknown."""
    import numpy as np

    return np.zeros((0, dimension or 0), dtype=np.float32)


def l2_normalize(matrix: npt.ArrayLike) -> Vectors:
    """Scale each row to unit length, in float32.

    Rows with zero norm are left as zeros: dividing would give NaN, and a NaN
    vector poisons every cosine it touches in the index.
    """
    import numpy as np

    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    result: Vectors = (out / norms).astype(np.float32, copy=False)
    return result
