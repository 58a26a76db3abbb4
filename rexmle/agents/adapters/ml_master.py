"""ML-Master adapter: the run's workspace and settings as ``main_mcts.py`` arguments.

Run inside ML-Master's environment: ``python ml_master.py CONFIG.json`` (see ``adapter_runtime``).
Its source (the pinned commit of the paper authors' fork) lies read-only in the environment's
``src/``; the agent runs with its logs and workspaces under ``agent/`` of the workspace.

- Instructions: ``instructions.md`` (rules + task) with hardware, time and step limits, written
  to ``agent/full_instructions.md`` (``desc_file``).
- Models: ``gw/<model>`` aliases with ``agent.<role>.base_url`` = the gateway's ``/v1`` and
  ``agent.<role>.api_key`` = the run's token: that is ML-Master's OpenAI-compatible path (a
  ``claude*`` or ``gemini*`` name would take its provider SDKs and their own endpoints).
- Under ``llm_route: native`` (:mod:`native_llm`) a ``claude-*`` model goes by its bare name
  through ML-Master's Anthropic SDK with ``agent.<role>.base_url`` = the gateway's root (the SDK
  appends ``/v1/messages``), and a ``gemini-*`` model through its google-genai client, which
  reads ``GOOGLE_GEMINI_BASE_URL`` = the gateway's root (ML-Master itself writes the base URL
  to ``GOOGLE_API_BASE_URL``, which the SDK never reads). ML-Master's Anthropic and Gemini
  back-ends for the feedback model read the ``feedback`` role's URL and key for both roles.
- Never ``start.sh``: it sets ``CUDA_VISIBLE_DEVICES`` from ``ML_MASTER_GPU_INDEX``; the
  adapter keeps the harness's value.
- Validation: ML-Master sends ``submission_<node>.csv`` alone (multipart ``POST /validate``,
  ``GET /health`` first) to ``ML_MASTER_VALIDATE_URL``. The adapter points that at a small
  forwarder on 127.0.0.1 that adds the files the CSV names (from ML-Master's ``submission/``
  folder) and passes the upload on to the validation server's multipart endpoint, which
  answers ``{"is_valid": ..., "result": ...}`` (format only). ``WORKSPACE_DIR`` points to a
  folder without ``.grading_port``, so its random choice among URLs has one live candidate
  plus a dead fallback it only tries after that one.
- Best submission: ML-Master keeps its best node's submission in
  ``workspaces/<exp>/best_submission/`` (``node_id.txt`` names the node); each new best is
  offered to :class:`BestSubmission` (the agent's own choice: no metric comparison). Under the
  ``study`` selection it is taken as it is, unchecked, as the study copied it.
- It exits 1 from a logging error at the very end even after success: the harness judges the
  submission, not that exit code.
- Collected into ``agent_output/``: its logs folder (journal, best solution, tree).
"""

from __future__ import annotations

import email.parser
import json
import os
import sys
import threading
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

if __package__:
    from rexmle.agents.adapters import adapter_runtime as runtime
    from rexmle.agents.adapters import native_llm
else:  # run as a script inside the agent's environment
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import adapter_runtime as runtime  # type: ignore[no-redef]
    import native_llm  # type: ignore[no-redef]

STUDY_VALIDATE_PORT = runtime.STUDY_VALIDATE_PORT
"""Under the study's texts the forwarder listens where ML-Master's prompt files say
(``localhost:5001``) when the port is free (inside bwrap it always is)."""
EXP_NAME = "rexmle"


def build(config: dict[str, object], environ: dict[str, str]) -> runtime.Launch:
    """ML-Master's command line, environment additions and instructions file for this run."""
    base_url, token = runtime.gateway(environ)
    source = config.get("source_dir")
    if not source or not (Path(str(source)) / "main_mcts.py").is_file():
        msg = f"ML-Master's source (main_mcts.py) is not in {source}: reinstall its environment"
        raise runtime.AdapterError(msg)
    work = Path(str(config["work_dir"]))
    desc_file = work / "full_instructions.md"
    models = dict(config["models"])  # type: ignore[call-overload]
    temperatures = dict(config.get("temperatures") or {})  # type: ignore[call-overload]
    data_dir = str(config["data_dir"])
    argv = [
        sys.executable,
        str(Path(str(source)) / "main_mcts.py"),
        f"dataset_dir={data_dir}",
        f"data_dir={data_dir}",
        f"desc_file={desc_file}",
        f"exp_name={EXP_NAME}",
        f"log_dir={work / 'logs'}",
        f"workspace_dir={work / 'workspaces'}",
        "start_cpu_id=0",
        f"cpu_number={config['cpus']}",
        "copy_data=False",
        f"agent.time_limit={int(float(str(config['time_limit_s'])))}",
    ]
    if config.get("steps") is not None:
        argv.append(f"agent.steps={config['steps']}")
    if config.get("step_timeout_s") is not None:
        argv.append(f"exec.timeout={int(float(str(config['step_timeout_s'])))}")
    route = native_llm.llm_route(config)
    backends: set[str] = set()
    for role in ("code", "feedback"):
        backend = native_llm.native_backend(str(models[role]), route)
        backends.add(backend or "openai")
        argv += [
            f"agent.{role}.model={native_llm.model_name(str(models[role]), route)}",
            f"agent.{role}.base_url={base_url if backend else base_url + '/v1'}",
            f"agent.{role}.api_key={token}",
        ]
        if role in temperatures:
            argv.append(f"agent.{role}.temp={temperatures[role]:g}")
    for key, value in dict(config.get("options") or {}).items():  # type: ignore[call-overload]
        argv.append(f"{key}={value}")
    env = {
        "ML_MASTER_VALIDATE_URL": f"http://127.0.0.1:{config['forwarder_port']}",
        "WORKSPACE_DIR": str(work),
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "OPENAI_API_KEY": token,
    }
    if "gemini" in backends:
        env["GOOGLE_GEMINI_BASE_URL"] = base_url
    notes = runtime.compose_prompt(config, "ml-master")
    return runtime.Launch(argv=argv, env=env, cwd=work, files={desc_file: notes})


def multipart_body(csv_bytes: bytes, files: dict[str, bytes]) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body: part ``file`` (the CSV), then one ``files`` part per
    named file (filename = its path relative to the submission folder). Returns (body, type).
    """
    boundary = f"rexmle-{uuid.uuid4().hex}"
    chunks: list[bytes] = []
    parts = [("file", "submission.csv", csv_bytes)]
    parts += [("files", name, data) for name, data in sorted(files.items())]
    for field_name, filename, data in parts:
        quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
        chunks.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field_name}"; '
            f'filename="{quoted}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        )
        chunks += [data, b"\r\n"]
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


def _parse_single_file(body: bytes, content_type: str) -> bytes:
    """The first part's content of a multipart upload (ML-Master sends one ``file`` part)."""
    parser = email.parser.BytesParser()
    message = parser.parsebytes(
        f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode() + body
    )
    for part in message.walk():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else b""
    msg = "the upload has no 'file' part"
    raise ValueError(msg)


class ValidationForwarder:
    """ML-Master's validation URL inside the sandbox (see the module docstring)."""

    def __init__(self, config: dict[str, object]):
        """Args: config: the adapter config (validation URL, work folder, forwarder port)."""
        self.target = str(config["validation_url"])
        self.work = Path(str(config["work_dir"]))
        self.port = int(str(config["forwarder_port"]))
        forwarder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, _format: str, *_args: object) -> None:
                return

            def _reply(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/health":
                    self._reply(200, {"ok": True})
                else:
                    self._reply(404, {"error": "GET /health or POST /validate"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                try:
                    csv_bytes = _parse_single_file(body, self.headers.get("Content-Type", ""))
                except ValueError as error:
                    self._reply(400, {"error": str(error), "details": str(error)})
                    return
                status, answer = forwarder.forward(csv_bytes)
                self._reply(status, answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        """Serve in a daemon thread."""
        self.thread.start()

    def forward(self, csv_bytes: bytes) -> tuple[int, dict[str, object]]:
        """Add the files the CSV names and pass the upload to the validation server."""
        workspace = runtime.newest_folder(self.work / "workspaces", f"{EXP_NAME}*")
        folder = None if workspace is None else workspace / "submission"
        files: dict[str, bytes] = {}
        if folder is not None and folder.is_dir():
            scratch = self.work / ".validate.csv"
            scratch.write_bytes(csv_bytes)
            for relative in runtime.named_files(scratch, folder):
                files[relative.as_posix()] = (folder / relative).read_bytes()
            scratch.unlink()
        body, content_type = multipart_body(csv_bytes, files)
        request = urllib.request.Request(
            self.target, data=body, method="POST", headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return 200, json.loads(response.read())
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            return error.code, {"error": detail, "details": detail}
        except OSError as error:
            return 502, {"error": str(error), "details": str(error)}


class MlMasterResults:
    """Offers ML-Master's best submission whenever it changes; collects its logs."""

    def __init__(self, config: dict[str, object], best: runtime.BestSubmission):
        """Args: config: the adapter config; best: where valid candidates go."""
        self.work = Path(str(config["work_dir"]))
        self.output = Path(str(config["output_dir"]))
        self.best = best
        self.last_node: str | None = None
        self.policy = runtime.selection_policy(config)

    def poll(self) -> None:
        """Offer ``best_submission/`` when its node changed."""
        workspace = runtime.newest_folder(self.work / "workspaces", f"{EXP_NAME}*")
        if workspace is None:
            return
        folder = workspace / "best_submission"
        node_file = folder / "node_id.txt"
        if not (folder / "submission.csv").is_file():
            return
        node = node_file.read_text(encoding="utf-8").strip() if node_file.is_file() else None
        stamp = f"{node}:{(folder / 'submission.csv').stat().st_mtime_ns}"
        if stamp == self.last_node:
            return
        self.last_node = stamp
        if self.policy == "study":
            self.best.take(folder, label=f"ml-master best_submission {node}")
            return
        candidate = self.output / "candidate"
        runtime.gather_submission(folder / "submission.csv", candidate)
        self.best.offer(candidate, metric=None, lower_is_better=None, label=f"ml-master {node}")

    def collect(self) -> None:
        """Copy ML-Master's logs folder into ``agent_output/``."""
        logs = runtime.newest_folder(self.work / "logs", f"{EXP_NAME}*")
        if logs is not None:
            runtime.copy_into(logs, self.output / "logs")


def keeper(
    config: dict[str, object], best: runtime.BestSubmission
) -> tuple[runtime.Callable[[], None], runtime.Callable[[], None]]:
    """(poll, collect) for :func:`adapter_runtime.run_agent`; starts the validation forwarder."""
    if config.get("forwarder_port") is None:
        study_port = config.get("study_texts") and runtime.port_is_free(STUDY_VALIDATE_PORT)
        config["forwarder_port"] = STUDY_VALIDATE_PORT if study_port else runtime.free_port()
    ValidationForwarder(config).start()
    results = MlMasterResults(config, best)
    return results.poll, results.collect


if __name__ == "__main__":
    os.environ.pop("ML_MASTER_GPU_INDEX", None)
    sys.exit(runtime.main(build, keeper))
