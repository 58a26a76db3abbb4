"""Decompression bombs are refused from their headers: invalid with a reason, small peak RSS.

Each bomb is ~2 MB on disk and decodes to 512 MiB; a real ``rexmle grade`` subprocess grades a
submission holding one, and its peak RSS (``ru_maxrss`` of that process alone) must stay far below
the decoded size. Before header-first checks, every one of these decoded in full.
"""

from __future__ import annotations

import sys

import pytest
from bomb_files import BOMB_TASKS, WRITERS, bomb_submission, grade_json, peak_rss_mib

from rexmle.io import ImageTooLarge, read_geometry, read_image
from rexmle.tasks.registry import load_task

DECODED_MIB = 512
PEAK_LIMIT_MIB = 320
"""Grading a mini submission peaks near 130 MiB; a decoded bomb adds at least 512 MiB."""


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_bomb_is_invalid_with_a_reason_and_small_peak_rss(suffix, prepared_mini, tmp_path):
    task_id = BOMB_TASKS[suffix]
    dirs = prepared_mini(task_id)
    impl = load_task(task_id).columns
    (path_column,) = impl.path_columns
    folder = bomb_submission(
        dirs.gold, suffix, tmp_path / "sub", id_column=impl.id_column, path_column=path_column
    )
    assert (folder / f"predictions/bomb{suffix}").stat().st_size < 4 << 20
    report = tmp_path / "grade.json"
    code, peak, stderr = peak_rss_mib(
        [sys.executable, "-m", "rexmle.cli", "grade", task_id, str(folder), "--workers", "1",
         "--data-dir", str(dirs.root.parent), "--json", str(report)]
    )  # fmt: skip
    assert code == 1, stderr
    grade = grade_json(report)
    assert grade["valid"] is False
    (reason,) = [r for r in grade["reasons"] if f"bomb{suffix}" in r]
    assert "the header declares" in reason
    assert "not decoded" in reason
    assert peak < PEAK_LIMIT_MIB, f"peak RSS {peak:.0f} MiB"


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_header_is_read_without_decoding(suffix, tmp_path):
    path = WRITERS[suffix](tmp_path / f"bomb{suffix}")
    geometry = read_geometry(path)
    assert geometry.shape in ((1024, 1024, 512), (16384, 32768))
    with pytest.raises(ImageTooLarge, match=r"536870912 values, more than the 1000 allowed"):
        read_image(path, max_pixels=1000)


READ_ONE = (
    "import sys\n"
    "from pathlib import Path\n"
    "from rexmle.io import read_image\n"
    "print(read_image(Path(sys.argv[1]), max_pixels=10**6).array.shape)\n"
)


@pytest.mark.parametrize("suffix", [".nii.gz", ".mha"])
def test_decoders_stop_at_the_declared_size(suffix, tmp_path):
    """A small declared shape in front of 512 MiB of compressed zeros: only the declared bytes
    are inflated (nibabel reads the header's byte count, ITK inflates into the header's buffer).
    """
    path = WRITERS[suffix](tmp_path / f"trailing{suffix}", (64, 64, 32), data_bytes=512 << 20)
    code, peak, stderr = peak_rss_mib([sys.executable, "-c", READ_ONE, str(path)])
    assert code == 0, stderr
    assert peak < PEAK_LIMIT_MIB, f"peak RSS {peak:.0f} MiB"
