"""Appends race retention: four threads and a second process (multiprocessing, 'spawn') append while
another thread trims over and over. Afterwards every line is valid JSON, each writer's records in the file
are a gap-free run ending at its last record, and every appended line was either counted as trimmed or is
still in the file: the trims removed only the oldest lines, never a concurrent append.

Both log shapes race at once (one spawned process is the slow part), since a session file's trim must take
the same lock its append does.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from reverie.logs import JsonlFile, RetentionPolicy, RetentionReport, SessionJsonlLog

WINDOW = 40
THREADS = 4
PER_THREAD = 40
PER_PROCESS = 60
EXPECTED = {"process": PER_PROCESS} | {f"thread-{n}": PER_THREAD for n in range(THREADS)}
SESSION = "cli-session"
# Age and count pruning on too: a session appended to during the sweep must never be deleted.
POLICY = RetentionPolicy(max_file_age_days=1, max_files_per_directory=1, max_lines_per_file=WINDOW)
KINDS = ("file", "session")
TRIM_PAUSE = 0.002  # seconds


class Shape:
    """One log shape seen through the same three operations."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.file = root / "wisp.jsonl" if kind == "file" else root / "tool-call" / f"{SESSION}.jsonl"
        self._single = JsonlFile(self.file, "wisp-executions")
        self._sessions = SessionJsonlLog(root / "tool-call", "tool-call")

    def append(self, record: dict[str, Any]) -> None:
        if self.kind == "file":
            self._single.append(record)
        else:
            self._sessions.append(SESSION, record)

    def retain(self) -> RetentionReport:
        log = self._single if self.kind == "file" else self._sessions
        # Real now: age pruning compares it with the real mtimes the appends leave.
        return log.retain(POLICY, now=datetime.now(UTC))

    def read(self) -> Iterator[dict[str, Any]]:
        return self._single.read() if self.kind == "file" else self._sessions.read(SESSION)


def append_to_both(root: Path, writer: str, count: int) -> None:
    shapes = [Shape(kind, root) for kind in KINDS]
    for seq in range(count):
        for shape in shapes:
            shape.append({"writer": writer, "seq": seq, "text": "Zürich 東京 " * (seq % 5)})


def append_from_process(root: str, ready: Any) -> None:
    """The second process's body (module level, so 'spawn' can import it)."""
    ready.set()
    append_to_both(Path(root), "process", PER_PROCESS)


def start_thread(body: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=body)
    thread.start()
    return thread


def assert_suffix_per_writer(shape: Shape) -> None:
    """Every line is a JSON object and each writer's records form ``range(k, last + 1)``."""
    raw = shape.file.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    seen: dict[str, list[int]] = defaultdict(list)
    for line in lines:
        record = json.loads(line)
        assert isinstance(record, dict)
        seen[record["writer"]].append(record["seq"])
    assert len(lines) == len(list(shape.read()))
    for writer, seqs in seen.items():
        last = EXPECTED[writer] - 1
        assert seqs == list(range(last - len(seqs) + 1, last + 1)), f"{shape.kind}: {writer} lost lines"


def race(tmp_path: Path, shapes: list[Shape]) -> dict[str, list[RetentionReport]]:
    """Run the writers against a trimmer thread; returns each shape's retention reports."""
    spawn = multiprocessing.get_context("spawn")
    ready = spawn.Event()
    child = spawn.Process(target=append_from_process, args=(str(tmp_path), ready))
    child.start()
    stop = threading.Event()
    reports: dict[str, list[RetentionReport]] = {shape.kind: [] for shape in shapes}

    def trim_until_stopped() -> None:
        # A short pause between rounds gives the other process, which polls for the file lock, its turn.
        while not stop.wait(TRIM_PAUSE):
            for shape in shapes:
                reports[shape.kind].append(shape.retain())

    trimmer: threading.Thread | None = None
    try:
        assert ready.wait(timeout=60), "the appending process never started"
        trimmer = start_thread(trim_until_stopped)
        writers = [start_thread(partial(append_to_both, tmp_path, f"thread-{n}", PER_THREAD)) for n in range(THREADS)]
        for thread in writers:
            thread.join()
        child.join(timeout=60)
        assert child.exitcode == 0
    finally:
        stop.set()
        if trimmer is not None:
            trimmer.join()
        if child.is_alive():
            child.kill()
            child.join()
    return reports


def test_trimming_never_loses_or_tears_a_concurrent_append(tmp_path: Path) -> None:
    shapes = [Shape(kind, tmp_path) for kind in KINDS]
    reports = race(tmp_path, shapes)
    for shape in shapes:
        during = reports[shape.kind]
        assert all(report.errors == () and report.files_deleted == 0 for report in during), shape.kind
        assert sum(report.lines_trimmed for report in during) > 0, shape.kind
        assert_suffix_per_writer(shape)
        assert shape.file.read_bytes().count(b"\n") >= WINDOW  # a trim keeps the window; appends only add
        final = shape.retain()
        assert final.errors == ()
        assert len(list(shape.read())) == WINDOW
        assert_suffix_per_writer(shape)
        # Conservation: every appended line was either trimmed (and counted) or is still in the file. An
        # append that landed in a file a trim had already read would vanish from both.
        trimmed = sum(report.lines_trimmed for report in [*during, final])
        assert trimmed + WINDOW == sum(EXPECTED.values()), shape.kind
