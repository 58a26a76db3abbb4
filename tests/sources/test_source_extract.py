import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from rexmle.sources.errors import UnsafeArchiveError
from rexmle.sources.extract import (
    archive_format,
    link_target_problem,
    member_path_problem,
    safe_extract,
    uncompressed_size,
)


def _tree(root: Path) -> set[str]:
    """Every path under root, relative, links not followed."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, content in members:
            if content is not None:
                info.size = len(content)
                tf.addfile(info, io.BytesIO(content))
            else:
                tf.addfile(info)
    return path


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_zip_extracts_into_target_with_counts(tmp_path):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("top/", b"")
        zf.writestr("top/x.txt", b"hello")  # 5 bytes
        zf.writestr("top/sub/y.bin", b"\x00" * 10)  # 10 bytes
    target = tmp_path / "raw"
    result = safe_extract(archive, target)
    assert (target / "top/x.txt").read_bytes() == b"hello"
    assert (target / "top/sub/y.bin").read_bytes() == b"\x00" * 10
    # members: top/, top/x.txt, top/sub/y.bin -> 3; files 2; bytes 5 + 10
    assert (result.member_count, result.file_count, result.uncompressed_bytes) == (3, 2, 15)
    assert uncompressed_size(archive) == 15
    # no staging folder left beside the target
    assert _tree(tmp_path) == {
        "a.zip",
        "raw",
        "raw/top",
        "raw/top/x.txt",
        "raw/top/sub",
        "raw/top/sub/y.bin",
    }


def test_tar_gz_extracts_and_keeps_inside_symlinks(tmp_path):
    archive = _tar(
        tmp_path / "a.tar.gz",
        [
            (_dir("."), None),
            (_file("d/f.txt"), b"abc"),
            (_link("d/alias.txt", "f.txt", tarfile.SYMTYPE), None),
            (_link("d/hard.txt", "d/f.txt", tarfile.LNKTYPE), None),
        ],
    )
    target = tmp_path / "raw"
    result = safe_extract(archive, target)
    assert (target / "d/f.txt").read_bytes() == b"abc"
    assert (target / "d/alias.txt").is_symlink()
    assert (target / "d/alias.txt").read_bytes() == b"abc"
    assert (target / "d/hard.txt").read_bytes() == b"abc"
    # the "." entry is the target itself and is not counted: 3 members, 1 regular file
    assert result.member_count == 3
    assert result.file_count == 1
    assert archive_format(archive) == "tar"


def test_extraction_merges_into_an_existing_folder(tmp_path):
    target = tmp_path / "raw"
    (target / "keep").mkdir(parents=True)
    (target / "keep/old.txt").write_text("old")
    (target / "top").mkdir()
    (target / "top/stale.txt").write_text("stale")
    (target / "top/x.txt").write_text("previous")
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("top/x.txt", b"new")
    safe_extract(archive, target)
    assert (target / "keep/old.txt").read_text() == "old"
    assert (target / "top/stale.txt").read_text() == "stale"
    assert (target / "top/x.txt").read_text() == "new"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../evil.txt", "'..'"),
        ("a/../../evil.txt", "'..'"),
        ("/abs/evil.txt", "absolute"),
        ("..\\evil.txt", "'..'"),
        ("C:/evil.txt", "absolute"),
        # Linux allows 255 bytes per component; the old unpacker hit an OSError half-way
        ("d/" + "x" * 300 + ".txt", "part over 255 bytes"),
    ],
)
def test_zip_with_escaping_member_is_refused_and_nothing_is_written(tmp_path, name, reason):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("good.txt", b"fine")
        zf.writestr(name, b"pwned")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "raw"
    with pytest.raises(UnsafeArchiveError, match=reason):
        safe_extract(archive, target)
    assert not target.exists()
    assert _tree(work) == set()
    assert not (tmp_path / "evil.txt").exists()
    assert not Path("/abs/evil.txt").exists()


def test_zip_symlink_pointing_outside_is_refused(tmp_path):
    archive = tmp_path / "link.zip"
    info = zipfile.ZipInfo("data/escape")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(info, "../../outside")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UnsafeArchiveError, match="points outside"):
        safe_extract(archive, work / "raw")
    assert _tree(work) == set()


def test_zip_symlink_inside_is_created_as_a_link(tmp_path):
    archive = tmp_path / "link.zip"
    info = zipfile.ZipInfo("data/alias")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data/real.txt", b"r")
        zf.writestr(info, "real.txt")
    safe_extract(archive, tmp_path / "raw")
    alias = tmp_path / "raw/data/alias"
    assert alias.is_symlink()
    assert alias.read_bytes() == b"r"


def _chr_device(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info


def _fifo(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.FIFOTYPE
    return info


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ([(_file("../evil.txt"), b"x")], "'..'"),
        ([(_file("/tmp/rexmle-evil.txt"), b"x")], "absolute"),
        ([(_link("d/passwd", "/etc/passwd", tarfile.SYMTYPE), None)], "absolute"),
        ([(_link("d/up", "../../outside", tarfile.SYMTYPE), None)], "points outside"),
        ([(_link("d/hard", "../outside", tarfile.LNKTYPE), None)], "points outside"),
        ([(_link("d/hard", "/etc/passwd", tarfile.LNKTYPE), None)], "absolute"),
        ([(_chr_device("dev/null"), None)], "device"),
        ([(_fifo("pipe"), None)], "device"),
    ],
    ids=[
        "dotdot",
        "absolute",
        "symlink-abs",
        "symlink-up",
        "hardlink-up",
        "hardlink-abs",
        "chardev",
        "fifo",
    ],
)
def test_tar_with_unsafe_member_is_refused_and_nothing_is_written(tmp_path, members, reason):
    archive = _tar(tmp_path / "evil.tar.gz", [(_file("ok.txt"), b"fine"), *members])
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UnsafeArchiveError, match=reason):
        safe_extract(archive, work / "raw")
    assert _tree(work) == set()
    assert not (tmp_path / "evil.txt").exists()
    assert not Path("/tmp/rexmle-evil.txt").exists()


def test_tar_symlink_chain_escaping_only_on_disk_is_refused(tmp_path):
    # x/y -> ..   resolves to the extraction root: fine on its own.
    # x/y/z -> .. looks like x/y/.. = x (inside) on paper, but x/y IS the root on disk,
    # so x/y/z would point at the root's parent. Then x/y/z/evil.txt would land outside.
    archive = _tar(
        tmp_path / "chain.tar.gz",
        [
            (_file("x/keep.txt"), b"k"),
            (_link("x/y", "..", tarfile.SYMTYPE), None),
            (_link("x/y/z", "..", tarfile.SYMTYPE), None),
            (_file("x/y/z/evil.txt"), b"pwned"),
        ],
    )
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, work / "raw")
    assert _tree(work) == set()
    assert not (tmp_path / "evil.txt").exists()


def test_failed_extraction_leaves_an_existing_target_unchanged(tmp_path):
    target = tmp_path / "raw"
    target.mkdir()
    (target / "old.txt").write_text("old")
    archive = _tar(
        tmp_path / "chain.tar.gz",
        [
            (_file("new.txt"), b"n"),
            (_link("y", "..", tarfile.SYMTYPE), None),
        ],
    )
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, target)
    assert _tree(target) == {"old.txt"}


def test_not_an_archive_is_a_value_error(tmp_path):
    plain = tmp_path / "notes.bin"
    plain.write_bytes(b"just bytes, not an archive")
    assert archive_format(plain) is None
    with pytest.raises(ValueError, match="extract: false"):
        safe_extract(plain, tmp_path / "raw")


def test_member_and_link_checks_by_hand():
    assert member_path_problem("a/b/c.txt") is None
    assert member_path_problem("./a") is None
    assert member_path_problem("a/..b/c") is None  # '..b' is a plain name
    assert member_path_problem("") == "empty member name"
    # symlink a/b/l -> ../c  resolves to a/c: inside
    assert link_target_problem("a/b/l", "../c", hard=False) is None
    # symlink a/l -> ../../c resolves to ../c: outside
    assert link_target_problem("a/l", "../../c", hard=False) is not None
    # hard link targets are relative to the archive root: a/h -> ../c is outside
    assert link_target_problem("a/h", "../c", hard=True) is not None
    assert link_target_problem("a/h", "a/c", hard=True) is None


def test_an_over_long_tar_member_is_refused_before_anything_is_written(tmp_path):
    tar = tmp_path / "long.tar.gz"
    with tarfile.open(tar, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo("d/" + "x" * 300 + ".txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UnsafeArchiveError, match="part over 255 bytes"):
        safe_extract(tar, work / "raw")
    assert _tree(work) == set()


def test_a_truncated_archive_is_a_damaged_archive_error_and_the_target_unchanged(tmp_path):
    from rexmle.sources.errors import DamagedArchiveError

    archive = _tar(
        tmp_path / "whole.tar.gz", [(_file(f"f{i}.bin"), bytes(range(256)) * 400) for i in range(4)]
    )
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    target = tmp_path / "raw"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(DamagedArchiveError, match=r"cut\.tar\.gz"):
        safe_extract(cut, target)
    assert _tree(target) == {"old.txt"}


def test_a_caller_s_limits_on_members_bytes_depth_and_links(tmp_path):
    from rexmle.sources.errors import ArchiveTooLarge
    from rexmle.sources.extract import ArchiveLimits
    from rexmle.tasks.paths import PathRules

    archive = _tar(
        tmp_path / "a.tar.gz",
        [
            (_file("a/b/c/deep.txt"), b"12345"),
            (_file("two.txt"), b"678"),
            (_link("alias", "two.txt", tarfile.SYMTYPE), None),
        ],
    )
    cases = [
        (ArchiveLimits(max_members=2), UnsafeArchiveError, "more than 2 members"),
        # 5 + 3 = 8 bytes of regular files
        (ArchiveLimits(max_unpacked_bytes=7), ArchiveTooLarge, "over 7 bytes"),
        (ArchiveLimits(paths=PathRules(max_depth=2)), UnsafeArchiveError, "3 folders deep"),
        (ArchiveLimits(allow_links=False), UnsafeArchiveError, "'alias': not a regular file"),
    ]
    for limits, error, said in cases:
        with pytest.raises(error, match=said):
            safe_extract(archive, tmp_path / "raw", limits=limits)
        assert not (tmp_path / "raw").exists()
    result = safe_extract(archive, tmp_path / "raw", limits=ArchiveLimits(max_unpacked_bytes=8))
    assert (result.member_count, result.uncompressed_bytes) == (3, 8)
