"""The JSONL logs and their retention (seed 001, Pass 0), on real files in a temp directory.

Ages are set with ``os.utime`` relative to the ``now`` each test passes, so no test reads the wall clock.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import reverie.logs
from reverie.errors import StorageError, ValidationError
from reverie.logs import (
    JsonlFile,
    PrunableLog,
    RetentionPolicy,
    RetentionReport,
    SessionJsonlLog,
    retain_all,
    validate_session_id,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DAY = 86_400.0
KEEP_EVERYTHING = RetentionPolicy(max_file_age_days=0, max_files_per_directory=0, max_lines_per_file=0)


def write_lines(path: Path, count: int, *, start: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for n in range(start, start + count):
            handle.write(json.dumps({"n": n}) + "\n")


def age(path: Path, days: float) -> None:
    """Make ``path`` last written ``days`` before NOW."""
    stamp = NOW.timestamp() - days * DAY
    os.utime(path, (stamp, stamp))


def numbers(records: Any) -> list[int]:
    return [record["n"] for record in records]


# --- JsonlFile -----------------------------------------------------------------------------------------


def test_append_writes_one_utf8_json_object_per_line(tmp_path: Path) -> None:
    log = JsonlFile(tmp_path / "wisp.jsonl", "wisp-executions")
    log.append({"city": "Zürich", "note": "line\u2028separator", "nested": {"k": [1, 2]}})
    log.append({"n": 2})
    raw = (tmp_path / "wisp.jsonl").read_bytes()
    assert raw.count(b"\n") == 2 and raw.endswith(b"\n")
    assert "Zürich".encode() in raw  # ensure_ascii=False
    assert list(log.read()) == [{"city": "Zürich", "note": "line\u2028separator", "nested": {"k": [1, 2]}}, {"n": 2}]


def test_append_creates_missing_directories(tmp_path: Path) -> None:
    log = JsonlFile(tmp_path / "a" / "b" / "log.jsonl", "x")
    log.append({"n": 1})
    assert numbers(log.read()) == [1]


def test_reading_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert list(JsonlFile(tmp_path / "nothing.jsonl", "x").read()) == []
    assert list(SessionJsonlLog(tmp_path / "no-dir", "x").read("s1")) == []
    assert SessionJsonlLog(tmp_path / "no-dir", "x").sessions() == []


def test_a_torn_last_line_is_skipped_and_the_next_append_is_not_swallowed(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = JsonlFile(path, "x")
    log.append({"n": 1})
    with path.open("ab") as handle:
        handle.write(b'{"n": 2, "torn')  # a crash mid-append
    assert numbers(log.read()) == [1]
    log.append({"n": 3})
    assert numbers(log.read()) == [1, 3]


def test_lines_that_are_not_json_objects_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n[1, 2]\n42\n"text"\nnot json\n\xff\xfe\n\n{"n": 2}\n')
    assert numbers(JsonlFile(path, "x").read()) == [1, 2]


@pytest.mark.parametrize("record", [{"v": object()}, {"v": float("nan")}, ["not", "a", "mapping"]])
def test_a_record_strict_json_cannot_hold_is_rejected_and_nothing_written(tmp_path: Path, record: Any) -> None:
    log = JsonlFile(tmp_path / "log.jsonl", "x")
    with pytest.raises(ValidationError):
        log.append(record)
    assert not (tmp_path / "log.jsonl").exists()


def test_clear_empties_the_file_and_appends_continue(tmp_path: Path) -> None:
    log = JsonlFile(tmp_path / "log.jsonl", "x")
    log.append({"n": 1})
    log.clear()
    log.clear()  # clearing nothing is fine
    assert list(log.read()) == []
    log.append({"n": 2})
    assert numbers(log.read()) == [2]


def test_file_retention_keeps_the_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "wisp.jsonl"
    write_lines(path, 10)
    os.chmod(path, 0o640)
    log = JsonlFile(path, "wisp-executions")
    report = log.retain(RetentionPolicy(max_lines_per_file=4), now=NOW)
    assert report == RetentionReport(log="wisp-executions", files_deleted=0, lines_trimmed=6, errors=())
    assert numbers(log.read()) == [6, 7, 8, 9]
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir() if "trim" in p.name] == []  # no temp file left behind
    assert log.retain(RetentionPolicy(max_lines_per_file=4), now=NOW).lines_trimmed == 0


def test_file_retention_counts_a_torn_last_line_as_a_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_lines(path, 5)
    with path.open("ab") as handle:
        handle.write(b'{"torn')
    assert JsonlFile(path, "x").retain(RetentionPolicy(max_lines_per_file=3), now=NOW).lines_trimmed == 3
    assert path.read_bytes() == b'{"n": 3}\n{"n": 4}\n{"torn'


@pytest.mark.parametrize("lines", [0, -1])
def test_file_retention_with_lines_disabled_changes_nothing(tmp_path: Path, lines: int) -> None:
    path = tmp_path / "log.jsonl"
    write_lines(path, 10)
    report = JsonlFile(path, "x").retain(RetentionPolicy(max_lines_per_file=lines), now=NOW)
    assert report == RetentionReport(log="x")
    assert numbers(JsonlFile(path, "x").read()) == list(range(10))


def test_file_retention_of_a_log_never_written_is_a_clean_no_op(tmp_path: Path) -> None:
    assert JsonlFile(tmp_path / "absent.jsonl", "x").retain(RetentionPolicy(), now=NOW) == RetentionReport(log="x")


def test_retention_needs_an_aware_now(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        JsonlFile(tmp_path / "log.jsonl", "x").retain(RetentionPolicy(), now=datetime(2026, 5, 1))


# --- SessionJsonlLog -----------------------------------------------------------------------------------


def test_sessions_append_read_list_and_read_all(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path / "tool-call", "tool-call")
    log.append("cli-session", {"n": 1})
    log.append("b.2_x", {"n": 2})
    log.append("cli-session", {"n": 3})
    assert log.sessions() == ["b.2_x", "cli-session"]
    assert numbers(log.read("cli-session")) == [1, 3]
    assert list(log.read_all()) == [("b.2_x", {"n": 2}), ("cli-session", {"n": 1}), ("cli-session", {"n": 3})]
    assert sorted(p.name for p in (tmp_path / "tool-call").glob("*.jsonl")) == ["b.2_x.jsonl", "cli-session.jsonl"]


def test_sessions_ignore_other_files_and_subdirectories(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    log.append("s1", {"n": 1})
    write_lines(tmp_path / "nested" / "s2.jsonl", 1)
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / "bad name.jsonl").write_text('{"n": 9}\n')
    assert log.sessions() == ["s1"]


def test_clear_one_session_or_all(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    for session in ("a", "b", "c"):
        log.append(session, {"n": 1})
    log.clear("b")
    assert log.sessions() == ["a", "c"]
    log.clear()
    assert log.sessions() == []
    log.clear("never-existed")


@pytest.mark.parametrize("session_id", ["", ".", "..", "a/b", "../x", "x" * 129, "sp ace", "é", "a\x00b", "a\nb"])
def test_a_bad_session_id_is_rejected(tmp_path: Path, session_id: str) -> None:
    log = SessionJsonlLog(tmp_path / "log", "x")
    with pytest.raises(ValidationError) as raised:
        log.append(session_id, {"n": 1})
    assert raised.value.field == "session_id"
    with pytest.raises(ValidationError):
        list(log.read(session_id))
    with pytest.raises(ValidationError):
        log.clear(session_id)
    assert not (tmp_path / "log").exists()


@pytest.mark.parametrize("session_id", ["a", "cli-session", "A.b_c-1", "...", "x" * 128])
def test_a_safe_session_id_is_accepted(session_id: str) -> None:
    assert validate_session_id(session_id) == session_id


def test_age_pruning_deletes_files_last_written_before_the_cutoff(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "tool-call")
    for session, days in (("old", 31), ("older", 400), ("recent", 29), ("today", 0)):
        log.append(session, {"n": 1})
        age(tmp_path / f"{session}.jsonl", days)
    report = log.retain(RetentionPolicy(max_file_age_days=30), now=NOW)
    assert report == RetentionReport(log="tool-call", files_deleted=2, lines_trimmed=0, errors=())
    assert log.sessions() == ["recent", "today"]


def test_the_count_cap_drops_the_oldest_first(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "feedback")
    for n, session in enumerate(("e", "a", "d", "b", "c")):
        log.append(session, {"n": n})
        age(tmp_path / f"{session}.jsonl", 10 - n)  # e is the oldest, c the newest
    report = log.retain(RetentionPolicy(max_files_per_directory=2), now=NOW)
    assert report.files_deleted == 3 and report.errors == ()
    assert log.sessions() == ["b", "c"]


def test_age_pruning_runs_before_the_count_cap(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    for n in range(4):
        log.append(f"s{n}", {"n": n})
        age(tmp_path / f"s{n}.jsonl", 100 - n * 40)  # ages 100, 60, 20, -20 days
    report = log.retain(RetentionPolicy(max_file_age_days=50, max_files_per_directory=3), now=NOW)
    assert report.files_deleted == 2 and log.sessions() == ["s2", "s3"]


def test_every_surviving_session_file_is_line_trimmed_keeping_its_age(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "tool-call")
    write_lines(tmp_path / "cli-session.jsonl", 10)
    write_lines(tmp_path / "short.jsonl", 2)
    age(tmp_path / "cli-session.jsonl", 3)
    before = (tmp_path / "cli-session.jsonl").stat().st_mtime_ns
    report = log.retain(RetentionPolicy(max_lines_per_file=4), now=NOW)
    assert (report.files_deleted, report.lines_trimmed, report.errors) == (0, 6, ())
    assert numbers(log.read("cli-session")) == [6, 7, 8, 9]
    assert numbers(log.read("short")) == [0, 1]
    # A trim is not a write of records: the file must still age out on its last real write.
    assert (tmp_path / "cli-session.jsonl").stat().st_mtime_ns == before


def test_session_retention_with_every_dimension_disabled_changes_nothing(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    for n in range(5):
        write_lines(tmp_path / f"s{n}.jsonl", 10)
        age(tmp_path / f"s{n}.jsonl", 1000)
    negative = RetentionPolicy(max_file_age_days=-1, max_files_per_directory=-1, max_lines_per_file=-1)
    for policy in (KEEP_EVERYTHING, negative):
        assert log.retain(policy, now=NOW) == RetentionReport(log="x")
    assert len(log.sessions()) == 5 and all(len(list(log.read(s))) == 10 for s in log.sessions())


def test_session_retention_does_not_sweep_subdirectories_or_other_files(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    nested = tmp_path / "namespace" / "s.jsonl"
    write_lines(nested, 10)
    (tmp_path / "notes.txt").write_text("keep me")
    for path in (nested, tmp_path / "notes.txt"):
        age(path, 1000)
    report = log.retain(RetentionPolicy(max_file_age_days=1, max_files_per_directory=1, max_lines_per_file=1), now=NOW)
    assert report == RetentionReport(log="x")
    assert len(nested.read_text().splitlines()) == 10 and (tmp_path / "notes.txt").exists()


def test_session_retention_of_a_missing_directory_is_a_clean_no_op(tmp_path: Path) -> None:
    assert SessionJsonlLog(tmp_path / "absent", "x").retain(RetentionPolicy(), now=NOW) == RetentionReport(log="x")


def test_one_file_failing_is_recorded_and_the_sweep_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    for session in ("stuck", "old", "long"):
        write_lines(tmp_path / f"{session}.jsonl", 10)
    age(tmp_path / "stuck.jsonl", 100)
    age(tmp_path / "old.jsonl", 100)
    real_unlink = os.unlink

    def refuse_stuck(path: Any, *args: Any, **kwargs: Any) -> None:
        if os.fspath(path).endswith("stuck.jsonl"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", refuse_stuck)
    report = log.retain(RetentionPolicy(max_file_age_days=30, max_lines_per_file=4), now=NOW)
    assert report.files_deleted == 1 and report.lines_trimmed == 6
    assert len(report.errors) == 1 and "stuck.jsonl" in report.errors[0] and "PermissionError" in report.errors[0]
    assert log.sessions() == ["long", "stuck"]


def test_a_failing_trim_leaves_the_file_whole_and_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = SessionJsonlLog(tmp_path, "x")
    for session in ("a", "b"):
        write_lines(tmp_path / f"{session}.jsonl", 10)
    real_replace = os.replace

    def refuse_a(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if os.fspath(dst).endswith("a.jsonl"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", refuse_a)
    report = log.retain(RetentionPolicy(max_lines_per_file=5), now=NOW)
    assert report.lines_trimmed == 5 and len(report.errors) == 1 and "a.jsonl" in report.errors[0]
    assert numbers(log.read("a")) == list(range(10)) and numbers(log.read("b")) == list(range(5, 10))
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["a.jsonl", "b.jsonl"]


def test_reading_a_log_that_is_a_directory_raises_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").mkdir()
    with pytest.raises(StorageError):
        list(JsonlFile(tmp_path / "log.jsonl", "x").read())


# --- retain_all ----------------------------------------------------------------------------------------


class ExplodingLog:
    @property
    def name(self) -> str:
        return "exploding"

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        raise RuntimeError("disk on fire")


def test_both_log_shapes_are_prunable_logs(tmp_path: Path) -> None:
    assert isinstance(JsonlFile(tmp_path / "a.jsonl", "a"), PrunableLog)
    assert isinstance(SessionJsonlLog(tmp_path / "b", "b"), PrunableLog)


def test_a_log_that_raises_does_not_stop_the_others(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    single = JsonlFile(tmp_path / "wisp.jsonl", "wisp-executions")
    sessions = SessionJsonlLog(tmp_path / "tool-call", "tool-call")
    write_lines(single.path, 10)
    write_lines(sessions.directory / "old.jsonl", 1)
    age(sessions.directory / "old.jsonl", 60)
    policy = RetentionPolicy(max_file_age_days=30, max_lines_per_file=3)
    with caplog.at_level(logging.WARNING, logger="reverie.logs"):
        reports = retain_all([ExplodingLog(), single, sessions], policy, now=NOW)
    assert [r.log for r in reports] == ["exploding", "wisp-executions", "tool-call"]
    assert reports[0].errors == ("RuntimeError: disk on fire",) and reports[0].files_deleted == 0
    assert reports[1].lines_trimmed == 7 and reports[2].files_deleted == 1
    assert any("exploding" in r.getMessage() and r.exc_info for r in caplog.records)


def test_the_package_exports_its_public_names() -> None:
    assert sorted(reverie.logs.__all__) == sorted(
        ["JsonlFile", "PrunableLog", "RetentionPolicy", "RetentionReport", "SessionJsonlLog", "retain_all"]
        + ["validate_session_id", "StoredLog", "ImportReport", "import_legacy"]
    )
    assert RetentionPolicy() == RetentionPolicy(max_file_age_days=30, max_files_per_directory=1000)
    assert RetentionPolicy().max_lines_per_file == 50_000


def test_an_append_that_cannot_write_raises_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_text("")
    with pytest.raises(StorageError):
        JsonlFile(tmp_path / "plain-file" / "log.jsonl", "x").append({"n": 1})
    with pytest.raises(StorageError):
        SessionJsonlLog(tmp_path / "plain-file", "x").append("s1", {"n": 1})


def test_remove_takes_only_matching_records_atomically_and_deletes_emptied_files(tmp_path: Path) -> None:
    log = SessionJsonlLog(tmp_path / "conversation", "conversation")
    log.append("shared", {"agent": "a", "content": "mine"})
    log.append("shared", {"agent": "b", "content": "theirs"})
    log.append("solo", {"agent": "a", "content": "only mine"})
    with (tmp_path / "conversation" / "shared.jsonl").open("ab") as handle:
        handle.write(b"not json\n")
    before = os.stat(tmp_path / "conversation" / "shared.jsonl").st_mtime_ns
    assert log.remove(lambda r: r.get("agent") == "a") == 2
    assert [r["content"] for r in log.read("shared")] == ["theirs"]
    assert (tmp_path / "conversation" / "shared.jsonl").read_bytes().endswith(b"not json\n")  # kept
    assert os.stat(tmp_path / "conversation" / "shared.jsonl").st_mtime_ns == before  # not a new write
    assert log.sessions() == ["shared"]  # the emptied file is gone
    assert log.remove(lambda r: True, session_id="missing") == 0
