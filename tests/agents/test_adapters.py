"""LLM agent adapters, without installing any agent: the exact command line, environment and
files each builds (paper preset and custom), secrets and private paths kept out, the GPU pin,
and the best valid submission kept against a real validation server.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from rexmle.agents.adapters import adapter_runtime as runtime
from rexmle.agents.adapters import aide, ml_master, rdagent
from rexmle.agents.dummy import copy_sample_submission
from rexmle.agents.environments import AgentEnv
from rexmle.agents.llm_launch import adapter_config, prepare_launch
from rexmle.agents.registry import load_agent
from rexmle.errors import SpecError
from rexmle.runner.validation_server import ValidationServer
from rexmle.runner.workspace import Workspace, agent_env, build_workspace
from tests.agents.conftest import VALIDATION_URL

GATEWAY = {"REXMLE_LLM_BASE_URL": "http://127.0.0.1:4000", "REXMLE_LLM_TOKEN": "rx-token-123"}
HOST_SECRETS = {
    "OPENAI_API_KEY": "sk-host-openai-secret",
    "ANTHROPIC_API_KEY": "sk-ant-host-secret",
    "GEMINI_API_KEY": "host-gemini-secret",
    "AZURE_OPENAI_API_KEY": "host-azure-secret",
}
BIN = Path(sys.executable).parent


def fake_env(tmp_path: Path, name: str, *, with_source: bool = False) -> AgentEnv:
    root = tmp_path / "agents" / f"{name}-cpu-0123456789abcdef"
    if with_source:
        (root / "src").mkdir(parents=True)
        (root / "src" / "main_mcts.py").write_text("")
    return AgentEnv(
        name=name,
        variant="cpu",
        lock_file=Path(f"rexmle/agents/envs/{name}/cpu.lock"),
        lock_hash="ab" * 32,
        root=root,
        source="git https://example.invalid/repo@abc:sub" if with_source else None,
    )


def config_for(agent_id: str, workspace: Workspace, env: AgentEnv, **overrides) -> dict:
    spec = load_agent(agent_id).with_overrides(**overrides)
    config = adapter_config(
        spec,
        env,
        task_id="isles22",
        seed=0,
        time_limit_s=spec.time_limit_s,
        validation_url=VALIDATION_URL,
        hardware="a CPU (no GPU)",
        cuda_visible_devices=None,
        cpus=2,
    )
    path = workspace.root / ".adapter" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(config))
    return runtime.load_config(path)  # what the adapter reads back from config.json


def test_aide_paper_preset_command_line_environment_and_files(workspace, tmp_path):
    ws = workspace.root
    config = config_for("aide", workspace, fake_env(tmp_path, "aide"))
    launch = aide.build(config, GATEWAY)
    assert launch.argv == [
        str(BIN / "aide"),
        f"data_dir={ws / 'data'}",
        f"desc_file={ws / 'agent' / 'full_instructions.md'}",
        "exp_name=exp",
        f"log_dir={ws / 'agent' / 'logs'}",
        f"workspace_dir={ws / 'agent' / 'workspaces'}",
        "copy_data=False",
        "generate_report=False",
        "agent.steps=2000",
        "exec.timeout=32400",
        "agent.code.model=gw/gpt-5",
        "agent.code.temp=1",
        "agent.feedback.model=gw/gpt-5",
        "agent.feedback.temp=1",
        "agent.search.max_debug_depth=20",
        "agent.search.debug_prob=1",
    ]
    assert launch.env == {
        "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1",
        "OPENAI_API_KEY": "rx-token-123",
    }
    assert launch.cwd == ws / "agent"
    (desc_file,) = launch.files
    text = launch.files[desc_file]
    rules = workspace.instructions.read_text()
    assert text.startswith(rules.rstrip("\n"))
    assert "you have a CPU (no GPU)" in text
    assert "at most 12hrs 0mins 0secs of wall-clock time" in text
    assert "Total steps: at most 2000." in text
    assert "`./working`" in text


def test_aide_custom_model_steps_and_timeout(workspace, tmp_path):
    config = config_for(
        "aide/claude-sonnet-4-5", workspace, fake_env(tmp_path, "aide"), steps=3, step_timeout_s=60
    )
    argv = aide.build(config, GATEWAY).argv
    assert "agent.steps=3" in argv
    assert "exec.timeout=60" in argv
    assert "agent.code.model=gw/claude-sonnet-4-5" in argv
    assert "agent.feedback.model=gw/claude-sonnet-4-5" in argv
    assert load_agent("aide/claude-sonnet-4-5").id == "aide-claude-sonnet-4-5"
    assert load_agent("aide").with_overrides(model="gemini-3-pro").id == "aide-gemini-3-pro"


def test_ml_master_paper_preset_command_line_environment_and_files(workspace, tmp_path):
    ws = workspace.root
    env = fake_env(tmp_path, "ml-master", with_source=True)
    config = config_for("ml-master", workspace, env)
    config["forwarder_port"] = 5111
    launch = ml_master.build(config, GATEWAY)
    gateway_v1 = "http://127.0.0.1:4000/v1"
    assert launch.argv == [
        sys.executable,
        str(env.source_dir / "main_mcts.py"),
        f"dataset_dir={ws / 'data'}",
        f"data_dir={ws / 'data'}",
        f"desc_file={ws / 'agent' / 'full_instructions.md'}",
        "exp_name=rexmle",
        f"log_dir={ws / 'agent' / 'logs'}",
        f"workspace_dir={ws / 'agent' / 'workspaces'}",
        "start_cpu_id=0",
        "cpu_number=2",
        "copy_data=False",
        "agent.time_limit=43200",
        "agent.steps=5000",
        "exec.timeout=43200",
        "agent.code.model=gw/gpt-5",
        f"agent.code.base_url={gateway_v1}",
        "agent.code.api_key=rx-token-123",
        "agent.code.temp=1",
        "agent.feedback.model=gw/gpt-5",
        f"agent.feedback.base_url={gateway_v1}",
        "agent.feedback.api_key=rx-token-123",
        "agent.feedback.temp=1",
        "agent.search.max_debug_depth=20",
        "agent.search.debug_prob=1.0",
        "agent.search.num_drafts=5",
        "agent.search.num_bugs=1",
        "agent.search.num_improves=3",
        "agent.search.invalid_metric_upper_bound=100",
        "agent.search.metric_improvement_threshold=0.0001",
        "agent.search.max_improve_failure=3",
        "agent.search.parallel_search_num=3",
    ]
    assert launch.env == {
        "ML_MASTER_VALIDATE_URL": "http://127.0.0.1:5111",
        "WORKSPACE_DIR": str(ws / "agent"),
        "OPENAI_BASE_URL": gateway_v1,
        "OPENAI_API_KEY": "rx-token-123",
    }
    assert not (ws / "agent" / ".grading_port").exists()
    (desc_file,) = launch.files
    assert "Total steps: at most 5000." in launch.files[desc_file]


def test_ml_master_without_its_source_is_refused(workspace, tmp_path):
    config = config_for("ml-master", workspace, fake_env(tmp_path, "ml-master"))
    config["forwarder_port"] = 5111
    with pytest.raises(runtime.AdapterError, match=r"main_mcts\.py"):
        ml_master.build(config, GATEWAY)


def test_rdagent_paper_preset_command_line_environment_and_files(workspace, tmp_path):
    ws = workspace.root
    config = config_for("rdagent", workspace, fake_env(tmp_path, "rdagent"))
    launch = rdagent.build(config, {**GATEWAY, "PATH": "/usr/bin:/bin"})
    assert launch.argv == [
        str(BIN / "rdagent"),
        "data_science",
        "--competition",
        "isles22",
        "--timeout",
        "43080s",
    ]
    rd_data = ws / "agent" / "rd_data"
    assert launch.env == {
        "PATH": f"{ws / 'agent' / 'bin'}:{BIN}:/usr/bin:/bin",
        "BACKEND": "rdagent.oai.backend.LiteLLMAPIBackend",
        "CHAT_MODEL": "openai/gw/gpt-5",
        "EMBEDDING_MODEL": "openai/gw/text-embedding-3-small",
        "OPENAI_API_BASE": "http://127.0.0.1:4000/v1",
        "OPENAI_API_KEY": "rx-token-123",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DS_LOCAL_DATA_PATH": str(rd_data),
        "DS_SCEN": "rdagent.scenarios.data_science.scen.DataScienceScen",
        "DS_IF_USING_MLE_DATA": "False",
        "KG_IF_USING_MLE_DATA": "False",
        "DS_Coder_CoSTEER_ENV_TYPE": "conda",
        "DS_Runner_CoSTEER_ENV_TYPE": "conda",
        "CHAT_TEMPERATURE": "1",
    }
    assert set(launch.files) == {
        ws / "agent" / "bin" / "conda",
        rd_data / "isles22" / "description.md",
        rd_data / "eval" / "isles22" / "submission_test.csv",
        rd_data / "eval" / "isles22" / "valid.py",
    }
    assert launch.executables == (ws / "agent" / "bin" / "conda",)
    # eval/ holds the SAMPLE submission, byte for byte: no labels
    sample = (workspace.data / "sample_submission.csv").read_text()
    assert launch.files[rd_data / "eval" / "isles22" / "submission_test.csv"] == sample
    assert str(ws / "validate.py") in launch.files[rd_data / "eval" / "isles22" / "valid.py"]
    custom = rdagent.build(
        config_for("rdagent/claude-sonnet-4-5", workspace, fake_env(tmp_path, "rdagent"), steps=4),
        GATEWAY,
    )
    assert custom.argv[-2:] == ["--loop-n", "4"]
    assert custom.env["CHAT_MODEL"] == "openai/gw/claude-sonnet-4-5"
    assert custom.env["EMBEDDING_MODEL"] == "openai/gw/text-embedding-3-small"


@pytest.mark.parametrize("agent_id", ["aide", "ml-master", "rdagent", "aide/claude-sonnet-4-5"])
def test_no_provider_key_and_no_private_path_reaches_the_sandbox(
    agent_id, workspace, tmp_path, monkeypatch, mini_data_dir
):
    for name, value in HOST_SECRETS.items():
        monkeypatch.setenv(name, value)
    spec = load_agent(agent_id)
    env = fake_env(tmp_path, spec.llm.environment, with_source=spec.llm.adapter == "ml-master")
    env.root.mkdir(parents=True, exist_ok=True)
    env.stamp.write_text(json.dumps({"lock_hash": env.lock_hash}))
    env.python.parent.mkdir(parents=True)
    env.python.symlink_to(sys.executable)
    launch = prepare_launch(
        spec,
        workspace.root,
        task_id="isles22",
        seed=0,
        time_limit_s=spec.time_limit_s,
        validation_url=VALIDATION_URL,
        gpu_names=[],
        cuda_visible_devices=None,
        env=env,
    )
    sandbox_env = agent_env(
        workspace,
        task_id="isles22",
        seed=0,
        time_limit_s=spec.time_limit_s,
        validation_url=VALIDATION_URL,
        pass_env=spec.env,
        cuda_visible_devices=None,
    )
    written = (workspace.root / ".adapter" / "config.json").read_text()
    assert str(workspace.root) not in written  # the sandbox shows the workspace elsewhere
    config = runtime.load_config(workspace.root / ".adapter" / "config.json")
    module = {"aide": aide, "ml-master": ml_master, "rdagent": rdagent}[spec.llm.adapter]
    config["forwarder_port"] = 5111
    built = module.build(config, {**sandbox_env, **GATEWAY})
    agent_environment = runtime.child_environment(
        config, built.env, base={**sandbox_env, **GATEWAY}
    )
    seen = "\n".join(
        [
            *launch.argv,
            *built.argv,
            *agent_environment.values(),
            *built.files.values(),
            json.dumps(config),
        ]
    )
    for secret in HOST_SECRETS.values():
        assert secret not in seen
    assert str(mini_data_dir) not in seen
    assert "/private" not in seen
    assert "gold" not in seen
    assert launch.record.lock_hash == env.lock_hash
    assert launch.readonly[0] == env.root


def test_launch_refuses_an_environment_that_is_not_installed(workspace, tmp_path):
    with pytest.raises(SpecError, match="rexmle agents install aide"):
        prepare_launch(
            load_agent("aide"),
            workspace.root,
            task_id="isles22",
            seed=0,
            time_limit_s=60,
            validation_url=VALIDATION_URL,
            gpu_names=[],
            cuda_visible_devices=None,
            env=fake_env(tmp_path, "aide"),
        )


def test_the_agent_never_chooses_its_gpus():
    extra = {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "ML_MASTER_GPU_INDEX": "0"}
    pinned = runtime.child_environment(
        {"cuda_visible_devices": "3"}, extra, base={"CUDA_VISIBLE_DEVICES": "5"}
    )
    assert pinned["CUDA_VISIBLE_DEVICES"] == "3"
    unpinned = runtime.child_environment(
        {"cuda_visible_devices": None}, extra, base={"CUDA_VISIBLE_DEVICES": "5"}
    )
    assert "CUDA_VISIBLE_DEVICES" not in unpinned


def test_model_settings_are_validated():
    with pytest.raises(SpecError, match="not an llm agent"):
        load_agent("dummy").with_overrides(model="gpt-5")
    with pytest.raises(SpecError, match="is not a model name"):
        load_agent("aide").with_overrides(model="gpt 5; rm -rf /")
    with pytest.raises(SpecError, match="unknown agent"):
        load_agent("dummy/gpt-5")


# ---- the best valid submission, against a real validation server ------------------------------


@pytest.fixture
def server(prepared_mini, mini_data_dir):
    prepared_mini("isles22")
    with ValidationServer("isles22", data_dir=mini_data_dir, max_requests_per_minute=1000) as live:
        yield live


def keeper_config(tmp_path: Path, server: ValidationServer, public: Path) -> dict:
    """Adapter config keys the keepers read, over a real workspace (its validate.py)."""
    workspace = build_workspace(
        tmp_path / "ws",
        task_id="isles22",
        public_dir=public,
        time_limit_s=60,
        validation={"url": server.url, "max_upload_bytes": 10**8, "max_requests_per_minute": 1000},
        data_mode="copy",
    )
    return {
        "workspace": str(workspace.root),
        "submission_dir": str(tmp_path / "submission"),
        "output_dir": str(tmp_path / "agent_output"),
        "validation_url": server.url,
        "work_dir": str(tmp_path / "agent"),
    }


def test_best_valid_submission_is_kept_and_invalid_or_worse_ones_are_not(
    server, prepared_mini, tmp_path
):
    public = prepared_mini("isles22").public
    good = tmp_path / "good"
    copy_sample_submission(public, good)
    broken = tmp_path / "broken"
    copy_sample_submission(public, broken)
    lines = (broken / "submission.csv").read_text().splitlines()
    (broken / "submission.csv").write_text("\n".join(lines[:-1]) + "\n")  # a test case missing
    best = runtime.BestSubmission(keeper_config(tmp_path, server, public))
    submission = tmp_path / "submission"
    assert best.offer(good, metric=0.5, lower_is_better=False, label="first")
    assert (submission / "submission.csv").read_text() == (good / "submission.csv").read_text()
    assert best.offer(broken, metric=0.9, lower_is_better=False, label="broken") is False
    assert (submission / "submission.csv").read_text() == (good / "submission.csv").read_text()
    assert best.offer(good, metric=0.4, lower_is_better=False, label="worse") is False
    assert best.offer(good, metric=0.7, lower_is_better=False, label="better")
    log = [json.loads(line) for line in (tmp_path / "agent_output" / "submissions.jsonl").open()]
    assert [(e["candidate"], e["kept"]) for e in log] == [
        ("first", True),
        ("broken", False),
        ("better", True),
    ]
    assert best.best_metric == 0.7
    assert best.n_kept == 2


def test_aide_results_offer_only_good_nodes_with_their_metric(server, prepared_mini, tmp_path):
    public = prepared_mini("isles22").public
    config = keeper_config(tmp_path, server, public)
    best = runtime.BestSubmission(config)
    results = aide.AideResults(config, best)
    logs = tmp_path / "agent" / "logs" / "0-exp"
    working = tmp_path / "agent" / "workspaces" / "0-exp" / "working"
    logs.mkdir(parents=True)
    copy_sample_submission(public, working)
    nodes: list[dict] = []

    def step(is_buggy: bool, value: float | None) -> None:
        nodes.append(
            {
                "id": f"n{len(nodes)}",
                "step": len(nodes),
                "is_buggy": is_buggy,
                "metric": {"value": value, "maximize": False},
            }
        )
        (logs / "journal.json").write_text(json.dumps({"nodes": nodes, "node2parent": {}}))
        (logs / "best_solution.py").write_text(f"# step {len(nodes)}\n")
        results.poll()

    step(False, 0.30)  # lower is better for this agent's own metric
    assert best.n_kept == 1
    assert best.best_metric == 0.30
    step(True, None)
    step(False, 0.45)  # worse
    assert best.n_kept == 1
    step(False, 0.20)
    assert best.n_kept == 2
    assert best.best_metric == 0.20
    masks = sorted(p.name for p in (tmp_path / "submission").rglob("*.nii.gz"))
    assert masks == sorted(p.name for p in working.rglob("*.nii.gz"))
    assert masks
    results.collect()
    collected = tmp_path / "agent_output" / "logs"
    assert (collected / "journal.json").is_file()
    assert (collected / "best_solution.py").is_file()


def test_adapter_stops_the_agent_on_sigterm_and_still_collects(tmp_path):
    import signal
    import subprocess
    import textwrap
    import time

    script = tmp_path / "fake_adapter.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(runtime.__file__).parent)!r})
            import adapter_runtime as runtime
            from pathlib import Path
            out = Path({str(tmp_path)!r})
            launch = runtime.Launch(
                argv=[sys.executable, "-c", "import time; time.sleep(600)"],
                env={{}}, cwd=out / "agent", files={{out / "agent" / "note.txt": "hi"}},
            )
            def collect():
                (out / "collected").write_text("yes")
            code = runtime.run_agent(
                launch, {{"cuda_visible_devices": None}}, poll=lambda: None, collect=collect,
                interval_s=0.1,
            )
            print("agent exit", code)
            """
        )
    )
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (tmp_path / "agent" / "note.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=20)
    assert f"agent exit -{int(signal.SIGTERM)}" in out
    assert (tmp_path / "collected").read_text() == "yes"


def test_gateway_variables_are_required(workspace, tmp_path):
    config = config_for("aide", workspace, fake_env(tmp_path, "aide"))
    with pytest.raises(runtime.AdapterError, match="REXMLE_LLM_BASE_URL"):
        aide.build(config, {})


def test_gather_submission_copies_named_files_only(tmp_path):
    folder = tmp_path / "working"
    (folder / "masks").mkdir(parents=True)
    (folder / "masks" / "a.nii.gz").write_bytes(b"a")
    (folder / "model.pt").write_bytes(b"big")
    (folder / "submission.csv").write_text(
        "case_id,mask_path\na,masks/a.nii.gz\nb,../outside.nii.gz\nc,/etc/passwd\n"
    )
    (tmp_path / "outside.nii.gz").write_bytes(b"x")
    target = tmp_path / "candidate"
    assert runtime.gather_submission(folder / "submission.csv", target) == 1
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "masks/a.nii.gz",
        "submission.csv",
    ]
    shutil.rmtree(target)


def test_rdagent_valid_script_checks_the_code_workspace_with_the_server(
    server, prepared_mini, tmp_path
):
    import subprocess

    public = prepared_mini("isles22").public
    config = keeper_config(tmp_path, server, public)
    config |= {"task": "isles22", "data_dir": str(public)}
    files = rdagent.eval_files(config, tmp_path / "rd_data")
    valid = tmp_path / "valid.py"
    valid.write_text(files[tmp_path / "rd_data" / "eval" / "isles22" / "valid.py"])
    code_workspace = tmp_path / "code"
    copy_sample_submission(public, code_workspace)
    (code_workspace / "model.bin").write_bytes(b"not part of the submission")
    ok = subprocess.run([sys.executable, str(valid)], cwd=code_workspace, capture_output=True)
    assert ok.returncode == 0, ok.stdout
    csv_file = code_workspace / "submission.csv"
    csv_file.write_text("\n".join(csv_file.read_text().splitlines()[:-1]) + "\n")
    bad = subprocess.run(
        [sys.executable, str(valid)], cwd=code_workspace, capture_output=True, text=True
    )
    assert bad.returncode == 1
    assert "invalid" in bad.stdout
