"""Run statuses end to end (local sandbox): completed, agent_error, invalid, infra_error, timeout."""

from __future__ import annotations

import json
import uuid

from runner_support import COPY_SAMPLE, marker_processes

from rexmle.records.runs import read_record


def test_sample_submission_run_is_completed_and_graded(run_agent, isles22_dirs):
    command = f'{COPY_SAMPLE} && echo agent-finished && echo notes > "$WORKSPACE/notes.txt"'
    record, folder = run_agent(command, dirs=isles22_dirs)
    assert record.status == "completed"
    assert record.exit_code == 0
    assert record.grade is not None
    assert record.grade.valid
    assert record.grade.headline_key == "dice"
    grade = json.loads((folder / "grade.json").read_text())
    assert grade["valid"] is True
    assert grade["metrics"]["dice"] == record.grade.headline_value
    assert "agent-finished" in (folder / "agent.stdout.log").read_text()
    assert (folder / "submission" / "submission.csv").is_file()
    # run.json on disk is the returned record; it names the sandbox and its (lack of) isolation
    on_disk = read_record(folder)
    assert on_disk == record
    assert record.sandbox is not None
    assert (record.sandbox.kind, record.sandbox.isolated) == ("local", False)
    assert record.versions["rexmle"]
    assert record.hardware["cpus"] >= 1
    assert record.run_id == record.config.run_id()
    # the workspace keeps what the agent wrote, but not its copy of the data
    assert (folder / "workspace" / "notes.txt").read_text() == "notes\n"
    assert not (folder / "workspace" / "data").exists()
    assert (isles22_dirs.public / "sample_submission.csv").is_file()


def test_crashing_agent_is_agent_error(run_agent, isles22_dirs):
    record, folder = run_agent("echo about to crash >&2; exit 7", dirs=isles22_dirs)
    assert record.status == "agent_error"
    assert record.exit_code == 7
    assert "exited with code 7" in (record.error or "")
    assert "about to crash" in (folder / "agent.stderr.log").read_text()
    assert record.grade is None  # nothing written, nothing graded


def test_bad_submission_is_invalid_with_reasons_in_grade_json(run_agent, isles22_dirs):
    command = (
        'printf "case_id,predicted_mask_path\\nnot-a-case,nowhere.nii.gz\\n" '
        '> "$SUBMISSION_DIR/submission.csv"'
    )
    record, folder = run_agent(command, dirs=isles22_dirs)
    assert record.status == "invalid_submission"
    assert record.grade is not None
    assert not record.grade.valid
    assert record.grade.grader_exit_code == 1
    grade = json.loads((folder / "grade.json").read_text())
    assert grade["valid"] is False
    assert grade["metrics"] == {}
    text = " ".join(grade["reasons"])
    assert "not-a-case" in text  # an unknown id is named
    assert "missing" in text  # and the test ids it lacks


def test_grader_failure_is_infra_error(run_agent, own_isles22):
    # a broken preparation: a gold mask vanished, so grading cannot be trusted (exit 2)
    gold_masks = sorted((own_isles22.gold / "predictions").glob("*.nii.gz"))
    assert gold_masks
    gold_masks[0].unlink()
    record, folder = run_agent(COPY_SAMPLE, dirs=own_isles22)
    assert record.status == "infra_error"
    assert record.grade is not None
    assert record.grade.grader_exit_code == 2
    assert "grader failed (exit 2)" in (record.error or "")
    assert (folder / "grade.log").stat().st_size > 0


def test_missing_data_is_infra_error_not_agent_error(run_agent, own_isles22):
    own_isles22.prepared_json.unlink()
    record, _ = run_agent(COPY_SAMPLE, dirs=own_isles22)
    assert record.status == "infra_error"
    assert "not prepared" in (record.error or "")


def test_agent_forking_children_is_killed_at_the_limit_and_still_graded(run_agent, isles22_dirs):
    marker = f"99{uuid.uuid4().int % 10**6:06d}"
    # writes a valid submission, then forks: a background sleeper, a child shell with its own
    # sleeper, a new-session sleeper and one that ignores SIGTERM; then sleeps itself
    command = (
        f"{COPY_SAMPLE}; sleep {marker}1 & sh -c 'sleep {marker}2' & setsid sleep {marker}3 & "
        f"(trap '' TERM; sleep {marker}4) & sleep {marker}5"
    )
    record, folder = run_agent(command, dirs=isles22_dirs, time_limit_s=3.0)
    assert record.status == "timeout"
    assert 3.0 <= record.timings_s["agent"] < 3.0 + 5.0
    assert record.killed_processes >= 5
    assert marker_processes(marker) == []
    assert "time limit reached" in (folder / "agent.stderr.log").read_text()
    # the submission written before the limit is graded
    assert record.grade is not None
    assert record.grade.valid
    assert json.loads((folder / "grade.json").read_text())["valid"] is True
