import hashlib

import pytest

from rexmle.sources.checksums import (
    MultiHasher,
    algorithms_needed,
    checksum_problems,
    file_digests,
    parse_checksum,
)


def test_parse_keeps_algorithm_and_lowercases_digest():
    digest = hashlib.md5(b"abc").hexdigest().upper()
    parsed = parse_checksum(f"MD5:{digest}")
    assert parsed.algorithm == "md5"
    assert parsed.hexdigest == digest.lower()
    assert str(parsed) == f"md5:{digest.lower()}"


def test_bare_hex_is_read_as_sha256():
    digest = hashlib.sha256(b"").hexdigest()
    assert parse_checksum(digest).algorithm == "sha256"


@pytest.mark.parametrize(
    "text",
    ["crc32:deadbeef", "md5:abc", "sha256:" + "g" * 64, "md5:" + "0" * 64],
)
def test_parse_rejects_unknown_algorithms_and_wrong_lengths(text):
    with pytest.raises(ValueError, match="checksum"):
        parse_checksum(text)


def test_multihasher_matches_hashlib_whatever_the_chunking(tmp_path):
    content = bytes(range(256)) * 5000
    hasher = MultiHasher(["md5", "sha256", "sha1"])
    for start in range(0, len(content), 777):
        hasher.update(content[start : start + 777])
    assert hasher.digests() == {
        "md5": hashlib.md5(content).hexdigest(),
        "sha1": hashlib.sha1(content).hexdigest(),
        "sha256": hashlib.sha256(content).hexdigest(),
    }
    assert hasher.n_bytes == len(content)
    path = tmp_path / "f.bin"
    path.write_bytes(content)
    assert file_digests(path) == {
        "md5": hashlib.md5(content).hexdigest(),
        "sha256": hashlib.sha256(content).hexdigest(),
    }


def test_algorithms_needed_adds_what_the_checksums_name():
    assert algorithms_needed([None, "sha1:" + "0" * 40]) == ("md5", "sha1", "sha256")
    assert algorithms_needed([]) == ("md5", "sha256")


def test_problems_name_expected_and_found_sums_and_origin():
    good = hashlib.md5(b"good").hexdigest()
    bad = hashlib.md5(b"bad").hexdigest()
    problems = checksum_problems(
        {"md5": bad, "sha256": hashlib.sha256(b"bad").hexdigest()},
        3,
        expected={"published by zenodo record 1": f"md5:{good}", "pinned": None},
        expected_size_bytes={"published by zenodo record 1": 4, "pinned": None},
        source="a.zip (http://x/a.zip)",
    )
    assert len(problems) == 2
    assert "expected 4 bytes" in problems[0]
    assert "got 3" in problems[0]
    assert f"expected md5:{good} (published by zenodo record 1) but got md5:{bad}" in problems[1]


def test_no_problems_when_everything_matches():
    digests = {"md5": hashlib.md5(b"x").hexdigest(), "sha256": hashlib.sha256(b"x").hexdigest()}
    assert (
        checksum_problems(
            digests,
            1,
            expected={"a": f"md5:{digests['md5']}", "b": f"sha256:{digests['sha256']}"},
            expected_size_bytes={"a": 1},
            source="x",
        )
        == []
    )
