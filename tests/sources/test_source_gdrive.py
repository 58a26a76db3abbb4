import json

import pytest
from source_server import FAST_RETRIES, Route, make_task

from rexmle.sources import fetch_task_raw
from rexmle.sources.gdrive import confirm_url_from_page, file_id_of, first_url, resolve_download_url
from rexmle.sources.http import make_opener
from rexmle.tasks.spec import SourceFile, SourceSpec

FILE_ID = "1RrM8YIwAENxzONSEaVZCzDkiiPMSmDxH"


@pytest.mark.parametrize(
    "value",
    [
        FILE_ID,
        f"https://drive.google.com/file/d/{FILE_ID}/view?usp=sharing",
        f"https://drive.google.com/uc?export=download&id={FILE_ID}",
    ],
)
def test_file_id_from_bare_id_or_drive_urls(value):
    assert file_id_of(value) == FILE_ID


def test_no_file_id_is_a_value_error():
    with pytest.raises(ValueError, match="no Google Drive file id"):
        file_id_of("https://example.org/x")


def test_form_page_builds_the_confirmed_url():
    page = f"""<html><body><form id="download-form"
      action="https://drive.usercontent.google.com/download" method="get">
      <input type="submit" value="Download anyway"/>
      <input type="hidden" name="id" value="{FILE_ID}">
      <input type="hidden" name="export" value="download">
      <input type="hidden" name="confirm" value="t">
      <input type="hidden" name="uuid" value="abc-123"></form></body></html>"""
    url = confirm_url_from_page(page, "https://drive.google.com/uc?export=download&id=x")
    assert url == (
        "https://drive.usercontent.google.com/download"
        f"?id={FILE_ID}&export=download&confirm=t&uuid=abc-123"
    )


def test_older_page_with_a_confirm_link_is_followed_relative_to_the_page():
    page = (
        '<a id="uc-download-link" href="/uc?export=download&amp;confirm=Xy_z&amp;id='
        f'{FILE_ID}">Download anyway</a>'
    )
    url = confirm_url_from_page(page, "https://drive.google.com/uc?export=download&id=a")
    assert url == f"https://drive.google.com/uc?export=download&confirm=Xy_z&id={FILE_ID}"


def test_page_without_form_or_link_gives_none():
    assert confirm_url_from_page("<p>Quota exceeded</p>", "https://x/uc") is None


def test_download_warning_cookie_flow(source_server):
    """Old flow: the page has no link, a download_warning cookie carries the token."""
    cookie_page = b"<html><body>Virus scan warning</body></html>"

    def uc(handler, query):
        handler.send_response(200)
        if "confirm" in query:
            handler.send_header("Content-Type", "application/zip")
            handler.send_header("Content-Length", "2")
            handler.end_headers()
            handler.wfile.write(b"PK")
            return
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Set-Cookie", "download_warning_123=TOKEN9; Path=/")
        handler.send_header("Content-Length", str(len(cookie_page)))
        handler.end_headers()
        handler.wfile.write(cookie_page)

    source_server.add("/uc", Route(handler=uc))
    url = resolve_download_url(
        FILE_ID, context="c", policy=FAST_RETRIES, opener=make_opener(), sleep=lambda _s: None
    )
    assert url == f"{first_url(FILE_ID)}&confirm=TOKEN9"


def test_small_file_served_directly(source_server, tmp_path, zip_builder):
    archive = zip_builder("small.zip", {"train_datasets/breast/low_quality/1.png": b"png"})
    source_server.add("/uc", Route(body=archive, content_type="application/zip"))
    task = make_task([SourceSpec(kind="gdrive", files=[SourceFile(name="t.zip", url=FILE_ID)])])
    raw = tmp_path / "u" / "raw"
    manifest = fetch_task_raw(task, raw, progress=False, retry_policy=FAST_RETRIES)
    assert (raw / "train_datasets/breast/low_quality/1.png").read_bytes() == b"png"
    # nothing to verify against: the manifest says so and keeps the sha256 to pin
    assert manifest.files[0].verified_against == []
    assert len(manifest.files[0].checksums["sha256"]) == 64
    assert json.loads((raw / ".rexmle-sources.json").read_text())["complete"] is True
