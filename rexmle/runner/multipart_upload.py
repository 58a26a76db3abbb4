"""ML-Master's validation upload: a ``multipart/form-data`` body turned into a tar archive.

ML-Master posts its CSV as part ``file`` (any filename: ``submission_<node>.csv``). Further
parts named ``files`` carry the files the CSV names, each with its path relative to the
submission folder as filename. The result is an uncompressed tar of a submission folder
(``submission.csv`` + those files) that the validation server checks like any other upload,
with the same member rules (no absolute paths, no ``..``, size limits).
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import tarfile

from rexmle.runner.validation_server import UploadError


def multipart_to_tar(body: bytes, content_type: str) -> bytes:
    """The tar archive of the submission folder a multipart upload describes.

    Raises:
        UploadError: not multipart, no ``file`` part, or a ``files`` part without a filename.
    """
    if not content_type.lower().startswith("multipart/form-data"):
        msg = f"expected multipart/form-data, got {content_type!r}"
        raise UploadError(msg)
    header = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(header + body)
    if not message.is_multipart():
        msg = "the multipart body could not be read (boundary missing or wrong)"
        raise UploadError(msg)
    members: dict[str, bytes] = {}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        field_name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        if field_name == "file":
            members["submission.csv"] = content
        elif field_name == "files":
            filename = part.get_filename()
            if not filename or filename == "submission.csv":
                msg = "every 'files' part needs a filename: its path in the submission folder"
                raise UploadError(msg)
            members[filename] = content
    if "submission.csv" not in members:
        msg = "the upload has no 'file' part (the submission CSV)"
        raise UploadError(msg)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
