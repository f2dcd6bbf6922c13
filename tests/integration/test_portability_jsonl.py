"""``reverie export`` / ``reverie import`` as JSONL, through the CLI, against real stores (SQLite files and an
embedded PostgreSQL) and the deterministic hash embedder: the lossless round trip into an empty store on both
backends, a merge into a non-empty store through save-time dedup, malformed lines, refused headers and models,
an existing path, an unknown agent, and a merge import resumed after it stopped (malformed line, SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from contract.test_portable import load, sample_rows
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.memory.longterm import LongTermMemory
from reverie.portability.jsonl import export_jsonl, import_jsonl
from reverie.portability.merge import BATCH_LINES, STATE_PREFIX
from reverie.storage import open_store, store_url
from reverie.storage.base import Store
from reverie.storage.portable import TABLES
from reverie.types import Entity

from .test_copy import build, dump

runner = CliRunner()
# Extraction off: a one-shot command would otherwise work the graph-extraction queue before it exits, and the
# round trip compares that queue too.
SETTINGS = '[embedding]\nprovider = "hash"\n\n[graph]\nextraction = "off"\n'


def cli(home: Path, *args: str) -> Result:
    return runner.invoke(app, ["--home", str(home), *args])


def make_home(path: Path, store_url_: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    store = f'[store]\nurl = "{store_url_}"\n\n' if store_url_ else ""
    (path / "reverie.toml").write_text(store + SETTINGS, encoding="utf-8")
    return path


def opened(home: Path, url: str | None = None) -> closing[Store]:
    return closing(open_store(url or store_url(home / "reverie.db"), now=FakeClock().now()))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def occupied(home: Path, url: str | None = None) -> dict[str, int]:
    with opened(home, url) as store:
        return {t.name: n for t in TABLES if t.name != "store_meta" and (n := store.count_rows(t.name))}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A home whose store holds a row in every portable table (``test_copy.build``)."""
    home = tmp_path / "src"
    build(home, FakeClock())
    return make_home(home)


@pytest.fixture
def exported(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / "export.jsonl"
    result = cli(source, "export", str(out), "--with-vectors")
    assert result.exit_code == 0, (result.output, result.exception)
    return out


# -- the round trip --------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_export_imported_into_an_empty_store_gives_back_every_table(
    backend: str, source: Path, exported: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    dest = make_home(tmp_path / "dest", url)
    result = cli(dest, "import", str(exported), "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads(result.stdout)
    assert report["format"] == "jsonl" and report["skipped"] == [] and report["resumed_from"] is None
    with opened(source) as src, opened(dest, url) as dst:
        original, back = dump(src), dump(dst)
    assert all(original[t.name] for t in TABLES)  # the source really has a row of every table
    for t in TABLES:
        assert back[t.name] == original[t.name], t.name
    assert {k: v["inserted"] for k, v in report["counts"].items() if "inserted" in v} == {
        t.name: len(original[t.name]) - (t.name == "store_meta") for t in TABLES
    }
    # ... and the imported store exports the same records again.
    again = tmp_path / "again.jsonl"
    assert cli(dest, "export", str(again), "--with-vectors").exit_code == 0
    assert lines(again)[1:] == lines(exported)[1:]


def test_every_awkward_value_survives_the_file_from_either_backend(store: Store, tmp_path: Path) -> None:
    """The contract suite's sample rows (unicode, NULLs, nested JSON, microseconds, -0.0 and extreme floats in
    vectors) of every portable table: exported from either backend, imported into an empty SQLite store."""
    clock = FakeClock()
    load(store, sample_rows())
    out = tmp_path / "sample.jsonl"
    report = export_jsonl(store, out, clock=clock, with_vectors=True)
    assert report.counts == {t.name: store.count_rows(t.name) for t in TABLES}
    assert lines(out)[0]["embedding_model"] == "hash-8" and lines(out)[0]["dimensions"] == 8
    with opened(tmp_path / "dest") as dest:
        memory = LongTermMemory(dest, clock)
        imported = import_jsonl(dest, out, memory=memory, clock=clock, embedding_model="hash-8")
        assert imported.skipped == [] and dump(dest) == dump(store)


def test_without_vectors_the_import_re_embeds_with_the_store_embedder(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "plain.jsonl"
    result = cli(source, "export", str(out), "--json")
    assert result.exit_code == 0, result.output
    records = lines(out)
    head = records[0]
    assert head["format"] == "reverie-export" and head["version"] == 1 and head["with_vectors"] is False
    assert head["embedding_model"] == "hash-256" and head["dimensions"] == 256 and head["agent"] is None
    assert not any(r["table"] == "fact_vectors" for r in records[1:])
    assert all(r["row"]["vector"] is None for r in records[1:] if r["table"] == "skills")
    assert json.loads(result.stdout)["counts"]["facts"] == sum(r["table"] == "facts" for r in records[1:])
    dest = make_home(tmp_path / "dest")
    assert cli(dest, "import", str(out)).exit_code == 0
    with opened(source) as src, opened(dest) as dst:
        want = {r["fact_id"]: r["vector"] for r in src.export_rows("fact_vectors")}
        got = {r["fact_id"]: r["vector"] for r in dst.export_rows("fact_vectors")}
        assert got == want  # the same deterministic model: byte-equal vectors, made anew
        for t in TABLES:
            if t.name not in ("fact_vectors", "skills"):
                assert list(dst.export_rows(t.name)) == list(src.export_rows(t.name)), t.name


# -- merge into a non-empty store ------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_import_into_a_non_empty_store_merges_through_dedup(
    backend: str, exported: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    dest = make_home(tmp_path / "dest", url)
    assert cli(dest, "memory", "save", "The user lives in Lisbon", "-c", "user/location").exit_code == 0
    assert cli(dest, "memory", "save", "Something only the destination knows").exit_code == 0
    with opened(dest, url) as store:  # the same (type, key) as the export's e-city under another id
        store.graph.add_entity(Entity("default", "e-mine", "place", "Lisbon", "lisbon"))
        held = {name: store.count_rows(name) for name in ("api_keys", "dream_locks")}
    result = cli(dest, "import", str(exported), "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads(result.stdout)
    counts = report["counts"]
    facts = counts["facts"]
    assert facts["merged"] == 1  # the duplicate reinforced the destination's entry
    assert facts["saved"] >= 5 and facts.get("inserted", 0) == 1  # live ones saved; the archived one as it was
    assert counts["sessions"] == {"inserted": 1} and counts["kv_items"] == {"inserted": 2}
    assert counts["fact_vectors"].get("entry saved anew", 0) >= 5
    # The store refused one row (a savepoint): reported with its line, the rest of its batch went in.
    assert counts["kg_entities"] == {"inserted": 2, "skipped": 1}
    # Another store's API keys and dream leases never come in with a merge.
    assert set(counts["api_keys"]) == {"not merged"} and set(counts["dream_locks"]) == {"not merged"}
    with opened(dest, url) as store:
        assert {name: store.count_rows(name) for name in held} == held
    ((where, why),) = report["skipped"]
    refused = lines(exported)[int(where.removeprefix("line ")) - 1]
    assert refused["row"]["entity_id"] == "e-city" and why.startswith("kg_entities:")
    with opened(dest, url) as store:
        assert sorted(r["entity_id"] for r in store.export_rows("kg_entities")) == ["e-mine", "e-old", "e-user"]
    listed = json.loads(cli(dest, "memory", "list", "-n", "100", "--json").stdout)["entries"]
    contents = [e["content"] for e in listed]
    assert contents.count("The user lives in Lisbon") == 1
    assert "Something only the destination knows" in contents and "日本語のテキスト、中文文本、한국어" in contents
    imported = next(e for e in listed if e["content"].startswith("Café"))
    assert imported["category"] == "unicode" and imported["metadata"]["note"] == "Café "
    assert imported["metadata"]["imported_id"] and imported["created_at"].startswith("2026-01-01")
    # The same file again: it was imported to its end, nothing happens twice.
    again = json.loads(cli(dest, "import", str(exported), "--json").stdout)
    assert again["counts"] == {} and again["resumed_from"] == len(lines(exported)) + 1


# -- bad input -------------------------------------------------------------------------------------------
def test_a_malformed_line_is_reported_with_its_number_and_nothing_of_it_is_written(
    exported: Path, tmp_path: Path
) -> None:
    text = exported.read_text(encoding="utf-8").splitlines()
    kv_line = next(i for i, line in enumerate(text) if '"table":"kv_items"' in line)
    record = json.loads(text[kv_line])
    record["row"]["version"] = "three"
    text[kv_line] = json.dumps(record)
    text[3] = "{not json"
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(text) + "\n", encoding="utf-8")
    dest = make_home(tmp_path / "dest")
    stopped = cli(dest, "import", str(broken), "--stop-on-error")
    assert stopped.exit_code == 2 and "line 4: not JSON" in stopped.stderr, stopped.output
    assert occupied(dest) == {}  # an empty-store import is one transaction: nothing at all
    result = cli(dest, "import", str(broken), "--json")
    assert result.exit_code == 0, result.output
    skipped = json.loads(result.stdout)["skipped"]
    assert [where for where, _ in skipped] == ["line 4", f"line {kv_line + 1}"]
    assert "kv_items.version: expected an integer" in skipped[1][1]
    assert f"line {kv_line + 1}" in result.stderr
    with opened(dest) as store:
        keys = [r["key"] for r in store.export_rows("kv_items")]
    assert record["row"]["key"] not in keys and len(keys) == 1


def write_header(path: Path, exported: Path, **changes: Any) -> Path:
    records = exported.read_text(encoding="utf-8").splitlines()
    head = {**json.loads(records[0]), **changes}
    path.write_text("\n".join([json.dumps(head), *records[1:]]) + "\n", encoding="utf-8")
    return path


def test_a_wrong_header_or_model_is_refused_before_anything_is_written(exported: Path, tmp_path: Path) -> None:
    dest = make_home(tmp_path / "dest")
    cases = [
        (write_header(tmp_path / "f.jsonl", exported, format="other"), "not a Reverie JSONL export"),
        (write_header(tmp_path / "v.jsonl", exported, version=2), "version 2 is not supported"),
        (write_header(tmp_path / "m.jsonl", exported, embedding_model="other-model"), "--reembed"),
    ]
    for path, why in cases:
        for source_format in ("jsonl", "auto"):
            result = cli(dest, "import", str(path), "--from", source_format)
            assert result.exit_code == 2 and why in result.stderr, (source_format, result.output)
            assert "nothing was written" in result.stderr
    assert occupied(dest) == {}
    not_export = tmp_path / "notes.txt"
    not_export.write_text("just some text\n", encoding="utf-8")
    result = cli(dest, "import", str(not_export))
    assert result.exit_code == 2 and "cannot tell what" in result.stderr
    # With --reembed the other model's export goes in, and the store's own model embeds it.
    result = cli(dest, "import", str(tmp_path / "m.jsonl"), "--reembed", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"]["fact_vectors"] == {"re-embedded": 9}
    with opened(dest) as store:
        assert {r["model"] for r in store.export_rows("fact_vectors")} == {"hash-256"}
        assert store.count_rows("fact_vectors") == store.count_rows("facts")


def test_an_existing_path_is_kept_without_force(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n", encoding="utf-8")
    result = cli(source, "export", str(out))
    assert result.exit_code == 2 and "exists" in result.stderr and "--force" in result.stderr
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert cli(source, "export", str(out), "--force").exit_code == 0
    assert lines(out)[0]["format"] == "reverie-export"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_an_agent_export_holds_that_agent_and_an_unknown_agent_is_an_error(source: Path, tmp_path: Path) -> None:
    assert cli(source, "memory", "save", "Other agent's fact", "--agent", "other").exit_code == 0
    out = tmp_path / "other.jsonl"
    result = cli(source, "export", str(out), "--agent", "other", "--with-vectors", "--json")
    assert result.exit_code == 0, result.output
    records = lines(out)
    assert records[0]["agent"] == "other"
    assert {r["table"] for r in records[1:]} == {"facts", "fact_versions", "fact_vectors", "dream_activity"}
    assert [r["row"]["content"] for r in records[1:] if r["table"] == "facts"] == ["Other agent's fact"]
    ghost = tmp_path / "ghost.jsonl"
    result = cli(source, "export", str(ghost), "--agent", "ghost")
    assert result.exit_code == 2 and "no agent 'ghost'" in result.stderr
    assert not ghost.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    # Imported with --agent, every record lands in that agent.
    dest = make_home(tmp_path / "dest")
    assert cli(dest, "import", str(out), "--agent", "renamed").exit_code == 0
    with opened(dest) as store:
        assert {r["agent_id"] for r in store.export_rows("facts")} == {"renamed"}


# -- resume ----------------------------------------------------------------------------------------------
def kv_export(tmp_path: Path, n: int) -> Path:
    """An export of a store with ``n`` KV items (many batches of a merge), made through the CLI."""
    home = make_home(tmp_path / "kv-src")
    now = FakeClock().now()
    with opened(home) as store:
        rows = [
            {"agent_id": "default", "key": f"k:{i:06d}", "value": {"i": i}, "created_at": now, "updated_at": now}
            | {"version": 1, "deleted_at": None}
            for i in range(n)
        ]
        store.import_rows("kv_items", rows)
        store.meta.set("embedding_model", "hash-256")
    out = tmp_path / "kv.jsonl"
    assert cli(home, "export", str(out)).exit_code == 0
    return out


def non_empty(path: Path) -> Path:
    home = make_home(path)
    assert cli(home, "memory", "save", "Already here").exit_code == 0
    return home


def kv_keys(home: Path) -> list[str]:
    with opened(home) as store:
        return [r["key"] for r in store.export_rows("kv_items")]


def test_a_merge_stopped_at_a_malformed_line_continues_after_the_last_committed_line(tmp_path: Path) -> None:
    out = kv_export(tmp_path, 3 * BATCH_LINES)
    text = out.read_text(encoding="utf-8").splitlines()
    bad = BATCH_LINES + 50  # a line number in the second batch
    good = text[bad - 1]
    text[bad - 1] = '{"table": "kv_items", "row": {}}'
    out.write_text("\n".join(text) + "\n", encoding="utf-8")
    dest = non_empty(tmp_path / "dest")
    result = cli(dest, "import", str(out), "--stop-on-error")
    assert result.exit_code == 2 and f"line {bad}:" in result.stderr and f"from line {bad}" in result.stderr
    assert len(kv_keys(dest)) == sum('"kv_items"' in line for line in text[: bad - 1])  # every line before it
    text[bad - 1] = good
    out.write_text("\n".join(text) + "\n", encoding="utf-8")
    result = cli(dest, "import", str(out), "--stop-on-error", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["resumed_from"] == bad
    assert report["counts"]["kv_items"] == {"inserted": sum('"kv_items"' in line for line in text[bad - 1 :])}
    assert kv_keys(dest) == [f"k:{i:06d}" for i in range(3 * BATCH_LINES)]


def test_a_merge_killed_mid_import_resumes_with_nothing_twice_and_nothing_missed(tmp_path: Path) -> None:
    total = 40 * BATCH_LINES
    out = kv_export(tmp_path, total)
    dest = non_empty(tmp_path / "dest")
    env = {**os.environ, "REVERIE_HOME": str(dest)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie", "import", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        committed = _wait_for_progress(dest / "reverie.db", proc)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the import ended before it could be killed"
    before = kv_keys(dest)
    assert 0 < len(before) < total and committed > 1
    result = cli(dest, "import", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    first_missing = next(
        n for n, r in enumerate(lines(out), start=1) if r.get("row", {}).get("key") == f"k:{len(before):06d}"
    )
    assert report["resumed_from"] == first_missing  # the line after the last committed one
    assert report["counts"]["kv_items"] == {"inserted": total - len(before)}
    assert kv_keys(dest) == [f"k:{i:06d}" for i in range(total)]


def _wait_for_progress(db: Path, proc: subprocess.Popen[bytes]) -> int:
    """The first committed progress of the import in ``db`` (the last line its batches covered)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as conn:
                row = conn.execute("SELECT value FROM store_meta WHERE key LIKE ?", (STATE_PREFIX + "%",)).fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is not None:
            return int(row[0])
        time.sleep(0.005)
    raise AssertionError("the import committed no batch in time")


def test_from_auto_tells_markdown_and_mem0_apart_by_content(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home")
    assert cli(home, "memory", "save", "Ana lives in Porto", "-c", "people").exit_code == 0
    notes = tmp_path / "notes"
    assert cli(home, "export", str(notes), "--format", "markdown").exit_code == 0
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [{"id": "m1", "memory": "Bruno plays the cello"}]}), encoding="utf-8")
    dest = make_home(tmp_path / "dest")
    for path, kind in ((notes, "markdown"), (mem0, "mem0")):
        result = cli(dest, "import", str(path), "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["format"] == kind
    contents = [e["content"] for e in json.loads(cli(dest, "memory", "list", "--json").stdout)["entries"]]
    assert sorted(contents) == ["Ana lives in Porto", "Bruno plays the cello"]
