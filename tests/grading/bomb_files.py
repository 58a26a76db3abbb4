"""Decompression bombs: small files whose headers declare far more voxels than any test image.

Each writer streams zeros through zlib, so a file of a few MB on disk declares ``shape`` (uint8)
and really holds that many voxels once decoded. Shared by the tests and ``bench/bombs.py``.
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

SHAPE_3D = (1024, 1024, 512)
"""512 MiB of uint8 voxels."""
SHAPE_2D = (16384, 32768)
"""512 MiB of uint8 pixels (rows, columns)."""
_CHUNK = 1 << 24


def _deflate(n_bytes: int, *, wbits: int, row: bytes | None = None, rows: int = 0) -> bytes:
    """Zlib (wbits 15) or gzip (wbits 31) stream of ``n_bytes`` zeros, or of ``rows`` x ``row``."""
    packer = zlib.compressobj(1, zlib.DEFLATED, wbits)
    parts = []
    if row is not None:
        per_chunk = max(1, _CHUNK // len(row))
        for start in range(0, rows, per_chunk):
            parts.append(packer.compress(row * min(per_chunk, rows - start)))
    else:
        zeros = bytes(_CHUNK)
        for start in range(0, n_bytes, _CHUNK):
            parts.append(packer.compress(zeros[: min(_CHUNK, n_bytes - start)]))
    parts.append(packer.flush())
    return b"".join(parts)


def write_nifti_gz(
    path: Path, shape: tuple[int, ...] = SHAPE_3D, *, data_bytes: int | None = None
) -> Path:
    """A ``.nii.gz`` whose header declares ``shape`` uint8, followed by ``data_bytes`` zeros
    (default: exactly the declared size).
    """
    import nibabel as nib

    header = nib.Nifti1Header()
    header.set_data_shape(shape)
    header.set_data_dtype(np.uint8)
    header.set_qform(np.eye(4), code=1)
    header.set_sform(np.eye(4), code=1)
    header["vox_offset"] = 352
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [packer.compress(header.binaryblock + bytes(4))]
    zeros = bytes(_CHUNK)
    total = math.prod(shape) if data_bytes is None else data_bytes
    for start in range(0, total, _CHUNK):
        parts.append(packer.compress(zeros[: min(_CHUNK, total - start)]))
    parts.append(packer.flush())
    path.write_bytes(b"".join(parts))
    return path


def write_mha(
    path: Path, shape: tuple[int, ...] = SHAPE_3D, *, data_bytes: int | None = None
) -> Path:
    """A compressed MetaImage (``.mha``) whose header declares ``shape`` (x y z) uint8, with
    ``data_bytes`` zeros compressed behind it (default: exactly the declared size).
    """
    data = _deflate(math.prod(shape) if data_bytes is None else data_bytes, wbits=15)
    header = (
        "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
        f"CompressedData = True\nCompressedDataSize = {len(data)}\n"
        "TransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = 0 0 0\nElementSpacing = 1 1 1\n"
        f"DimSize = {' '.join(str(n) for n in shape)}\nElementType = MET_UCHAR\n"
        "ElementDataFile = LOCAL\n"
    )
    path.write_bytes(header.encode("ascii") + data)
    return path


def write_nrrd(path: Path, shape: tuple[int, ...] = SHAPE_3D) -> Path:
    """A gzip-encoded NRRD whose header declares ``shape`` uint8."""
    header = (
        f"NRRD0004\ntype: uint8\ndimension: 3\nspace: left-posterior-superior\n"
        f"sizes: {' '.join(str(n) for n in shape)}\n"
        "space directions: (1,0,0) (0,1,0) (0,0,1)\nkinds: domain domain domain\n"
        "endian: little\nencoding: gzip\nspace origin: (0,0,0)\n\n"
    )
    path.write_bytes(header.encode("ascii") + _deflate(math.prod(shape), wbits=31))
    return path


def write_tiff(path: Path, shape: tuple[int, int] = SHAPE_2D) -> Path:
    """A zlib-compressed, tiled TIFF whose tags declare ``shape`` uint8."""
    import tifffile

    tile = (1024, 1024)
    n_tiles = math.ceil(shape[0] / tile[0]) * math.ceil(shape[1] / tile[1])
    zeros = np.zeros(tile, np.uint8)
    tiles: Iterator[np.ndarray] = (zeros for _ in range(n_tiles))
    tifffile.imwrite(
        str(path),
        tiles,
        shape=shape,
        dtype=np.uint8,
        tile=tile,
        compression="zlib",
        compressionargs={"level": 1},
    )
    return path


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_png(path: Path, shape: tuple[int, int] = SHAPE_2D) -> Path:
    """An 8-bit grayscale PNG whose IHDR declares ``shape`` (height, width)."""
    height, width = shape
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = _deflate(0, wbits=15, row=bytes(width + 1), rows=height)  # filter byte 0 + zeros
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )
    return path


WRITERS: dict[str, Callable[[Path], Path]] = {
    ".nii.gz": write_nifti_gz,
    ".mha": write_mha,
    ".nrrd": write_nrrd,
    ".tif": write_tiff,
    ".png": write_png,
}
"""Bomb writer per file suffix."""

BOMB_TASKS: dict[str, str] = {
    ".nii.gz": "isles22",
    ".mha": "panther-task1",
    ".nrrd": "seg_a",
    ".tif": "puma-track1-task1",
    ".png": "neurips-cellseg",
}
"""A task that accepts each format (its first gold case is replaced by the bomb)."""

_PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "sys.stderr.buffer.write(code.stderr[-4000:])\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(code.returncode, peak)\n"
)


def peak_rss_mib(argv: list[str], *, timeout_s: float = 600.0) -> tuple[int, float, str]:
    """Run ``argv`` as the only child of a fresh interpreter; (exit code, peak RSS in MiB, stderr).

    The peak is ``ru_maxrss`` of that interpreter's children: the process and every descendant
    it waited for, so nothing else this process ran is counted.
    """
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, *argv],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=True,
    )
    code, peak_kib = done.stdout.split()
    return int(code), int(peak_kib) / 1024, done.stderr


_SERVER = """
import http.client, json, resource, sys
from pathlib import Path
from rexmle.runner.validation_server import ValidationServer
task, data_dir, body_path = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
with ValidationServer(task, data_dir=data_dir) as server:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    connection.putrequest("POST", "/validate")
    connection.putheader("Content-Length", str(body_path.stat().st_size))
    connection.endheaders()
    with open(body_path, "rb") as body:  # the client streams from its own process's file
        while chunk := body.read(1 << 20):
            connection.send(chunk)
    response = connection.getresponse()
    answer = json.loads(response.read())
# VmHWM, not RUSAGE_SELF: ru_maxrss keeps the peak of the process this one was forked from
own = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"status": response.status, "answer": answer, "server": own, "check": children}))
"""


def upload_peak_rss(task_id: str, data_dir: Path, body: Path) -> dict[str, object]:
    """POST ``body`` to a real validation server in a fresh process; status, answer and peaks.

    Returns ``{"status", "answer", "server", "check"}``: ``server`` is the peak RSS (MiB,
    ``VmHWM``) of the process running the server (the harness's role; the client in it reads the
    body in 1 MiB chunks), ``check`` the largest peak among its children (the validation checks).
    """
    done = subprocess.run(
        [sys.executable, "-c", _SERVER, task_id, str(data_dir), str(body)],
        capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def bomb_submission(
    gold: Path, suffix: str, out: Path, *, id_column: str, path_column: str
) -> Path:
    """A copy of ``gold`` whose first case points at a bomb of ``suffix`` instead of its file."""
    import csv
    import shutil

    shutil.copytree(gold, out)
    with open(out / "submission.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    (out / rows[0][path_column]).unlink()
    relative = f"predictions/bomb{suffix}"
    WRITERS[suffix](out / relative)
    rows[0][path_column] = relative
    with open(out / "submission.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=[id_column, path_column], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out


def grade_json(path: Path) -> dict[str, object]:
    """A grade report written by ``rexmle grade --json``."""
    return json.loads(path.read_text(encoding="utf-8"))
