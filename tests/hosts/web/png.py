"""A tiny PNG reader (stdlib zlib/struct, numpy for the row filters): enough
to tell a screenshot that shows something from a blank one.

It reads 8-bit greyscale, RGB and RGBA images without interlacing (what
Chromium's screenshots are) and undoes the five row filters of the PNG
specification (section 9).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def read_png(path: Path) -> npt.NDArray[np.uint8]:
    """The image's pixels, shape (height, width, channels)."""
    data = path.read_bytes()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path} is not a PNG file")
    pos = len(SIGNATURE)
    idat = bytearray()
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in CHANNELS or interlace:
                raise ValueError(f"unsupported PNG: depth {depth}, colour {colour}")
            channels = CHANNELS[colour]
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(bytes(idat))
    stride = width * channels
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        row = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1).astype(np.int32)
        if kind == 0:
            current = row
        elif kind == 1:
            current = _sub(row, channels)
        elif kind == 2:
            current = (row + previous) & 0xFF
        else:
            current = _sequential(row, previous, channels, kind)
        out[y] = current
        previous = current
    return out.reshape(height, width, channels)


def _sub(row: npt.NDArray[np.int32], channels: int) -> npt.NDArray[np.int32]:
    pixels = row.reshape(-1, channels)
    return (np.cumsum(pixels, axis=0) & 0xFF).reshape(-1)


def _sequential(
    row: npt.NDArray[np.int32], up: npt.NDArray[np.int32], channels: int, kind: int
) -> npt.NDArray[np.int32]:
    """Average (3) and Paeth (4): each byte depends on the one to its left."""
    raw = row.tolist()
    above = up.tolist()
    out = [0] * len(raw)
    for i, value in enumerate(raw):
        left = out[i - channels] if i >= channels else 0
        if kind == 3:
            out[i] = (value + ((left + above[i]) >> 1)) & 0xFF
            continue
        upper_left = above[i - channels] if i >= channels else 0
        p = left + above[i] - upper_left
        pa, pb, pc = abs(p - left), abs(p - above[i]), abs(p - upper_left)
        if pa <= pb and pa <= pc:
            predictor = left
        elif pb <= pc:
            predictor = above[i]
        else:
            predictor = upper_left
        out[i] = (value + predictor) & 0xFF
    return np.array(out, dtype=np.int32)


def distinct_colours(path: Path) -> int:
    """How many different pixel values the image holds (1 for a blank page)."""
    pixels = read_png(path)
    flat = pixels.reshape(-1, pixels.shape[2])
    return len(np.unique(flat, axis=0))


def pixels_of_colour(path: Path, rgb: tuple[int, int, int]) -> int:
    """How many pixels are exactly *rgb* (a chart bar's fill, say)."""
    pixels = read_png(path)[:, :, :3]
    return int(np.all(pixels == np.array(rgb, dtype=np.uint8), axis=2).sum())


def changed_fraction(first: Path, second: Path) -> float:
    """The share of pixels that differ between two screenshots (1.0 when
    their sizes differ)."""
    a, b = read_png(first)[:, :, :3], read_png(second)[:, :, :3]
    if a.shape != b.shape:
        return 1.0
    return float(np.any(a != b, axis=2).mean())
