"""The tokenizer: WordPiece via ``tokenizers``, truncated to ``max_tokens``
and never padded (each batch is padded by hand to its longest member).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlane.core.errors import EmbedderError

# Texts are cut to this many characters per allowed token before tokenising.
# A WordPiece token always covers at least one character, so for any
# realistic text the first ``max_tokens`` tokens lie far inside the cut, and a
# pasted 10 MB log costs a 16 kB tokenisation instead of hundreds of MB of
# offsets. Only a pathological text (tens of thousands of characters that the
# normaliser deletes, e.g. control characters) could embed differently.
_CHARS_PER_TOKEN_CAP = 64


def load_tokenizer(tokenizer_path: Path, *, max_tokens: int) -> Any:
    """A ``tokenizers.Tokenizer`` set up for this recipe; ``EmbedderError`` if unreadable."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:  # tokenizers raises plain Exception on bad JSON
        raise EmbedderError(f"cannot load tokenizer {tokenizer_path}: {exc}") from exc
    # tokenizer.json files carry their own truncation/padding (the bundled one
    # pads everything to 128); ours must win. Padding is done by hand per
    # batch, so the tokenizer must not pad at all.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def tokenize(tokenizer: Any, texts: list[str], *, max_tokens: int) -> list[list[int]]:
    """The token ids of each text, cut to ``max_tokens``."""
    cap = max_tokens * _CHARS_PER_TOKEN_CAP
    clipped = [text[:cap] for text in texts]
    try:
        encodings = tokenizer.encode_batch(clipped)
    except TypeError:
        bad = next((t for t in clipped if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"embed() takes strings, got {type(bad).__name__}") from None
        # Lone surrogates (text read with surrogateescape) cannot cross
        # into Rust; replace them rather than fail the whole batch.
        clipped = [t.encode("utf-8", "replace").decode("utf-8") for t in clipped]
        encodings = tokenizer.encode_batch(clipped)
    return [encoding.ids for encoding in encodings]
