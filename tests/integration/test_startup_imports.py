"""Start-up cost, counted in modules (issue 21): ``reverie --version`` and ``--help`` load neither the model
runtime nor the web, MCP or schema stacks, ``import reverie`` loads no engine, and the stdio MCP server can
answer ``initialize`` without the tool registry. Each check runs in a fresh interpreter (a subprocess), since
this one has imported everything already. Counts, never timings: ``reverie bench startup`` has the times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import reverie
import reverie.types
from reverie.cli import bench as cli_bench

# What the command line must not load just to parse its arguments and print its help (issue 21).
HEAVY = ("numpy", "onnxruntime", "fastapi", "uvicorn", "starlette", "mcp", "httpx", "jsonschema", "pydantic")

_PROBE = """
import json, sys
snapshots = {}
def snap(name):
    snapshots[name] = sorted(sys.modules)
from reverie.cli.app import app
from typer.main import get_command
get_command(app)  # every command declared, as a run builds them
snap("import")
from reverie.cli import main
for args in (["--version"], ["--help"]):
    sys.argv = ["reverie", *args]
    try:
        main()
    except SystemExit:
        pass
    snap(args[0])
with open(OUT, "w") as f:
    json.dump(snapshots, f)
"""


def _loaded(tmp_path: Path) -> dict[str, set[str]]:
    """The top-level packages loaded after ``import reverie.cli.app`` (the command line built), then after
    ``reverie --version``, then after ``reverie --help``, in one fresh interpreter."""
    out = tmp_path / "modules.json"
    script = f"OUT = {str(out)!r}\n" + _PROBE
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "reverie 0.1.0" in done.stdout and "Usage" in done.stdout
    snapshots = json.loads(out.read_text(encoding="utf-8"))
    return {step: set(names) for step, names in snapshots.items()}


def _top(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_the_command_line_loads_no_heavy_library_to_start(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path)
    for step in ("import", "--version", "--help"):
        assert _top(loaded[step]) & set(HEAVY) == set(), step
        # Nor the engine, the services, the API, the MCP server or the benchmarks' modules.
        reverie_modules = {m for m in loaded[step] if m.startswith("reverie.")}
        for heavy in ("reverie.engine", "reverie.settings", "reverie.storage", "reverie.api", "reverie.mcp"):
            assert not any(m == heavy or m.startswith(heavy + ".") for m in reverie_modules), (step, heavy)
        assert not any(m.startswith("reverie.bench.") for m in reverie_modules), step
    assert "rich" not in _top(loaded["--version"])  # nothing is printed through Rich
    assert len(loaded["--version"]) < 300  # Python itself, typer and the command modules; the engine is 900+


def _fresh(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: list[str] = json.loads(done.stdout)
    return result


def test_import_reverie_loads_no_engine_until_a_name_needs_it() -> None:
    before, after = _fresh(
        "import json, sys, reverie\n"
        "before = sorted(sys.modules)\n"
        "reverie.open, reverie.Settings, reverie.MemoryEntry\n"
        "print(json.dumps([before, sorted(sys.modules)]))"
    )
    assert "reverie.engine" not in before and "numpy" not in _top(set(before))
    assert "reverie.errors" in before and "reverie.clock" in before  # the light ones stay eager
    assert "reverie.engine" in after and "reverie.settings" in after


def test_every_public_name_still_resolves_lazily() -> None:
    names = _fresh(
        "import json, reverie\n"
        "namespace = {}\n"
        "exec('from reverie import *', namespace)\n"
        "assert reverie.open is reverie.engine.open and callable(reverie.open)\n"
        "assert set(reverie.__all__) <= set(dir(reverie))\n"
        "print(json.dumps(sorted(k for k in namespace if k != '__builtins__')))"
    )
    assert names == sorted(reverie.__all__)
    assert set(reverie.__all__) <= set(dir(reverie))
    assert set(reverie.types.__all__) <= set(dir(reverie.types))
    for name in reverie.types.__all__:
        assert getattr(reverie.types, name) is not None, name


def test_the_stdio_mcp_server_imports_no_tool_registry() -> None:
    """``initialize`` is answered before the engine opens: the module serving it loads the SDK, not the
    registry (jsonschema, every service) nor the engine."""
    loaded = set(_fresh("import json, sys, reverie.mcp.server\nprint(json.dumps(sorted(sys.modules)))"))
    for name in ("reverie.tools", "reverie.engine", "reverie.settings", "jsonschema", "numpy", "fastapi"):
        assert not any(m == name or m.startswith(name + ".") for m in loaded), name
    assert "mcp.server.stdio" in loaded


def test_the_bench_defaults_shown_in_help_are_the_bench_modules_own() -> None:
    """cli/bench.py writes the defaults its help shows (importing the bench modules would load numpy)."""
    from reverie.bench import faults, latency, startup

    assert (cli_bench.FAULTS_SEED, cli_bench.FAULTS_ROUNDS, cli_bench.FAULTS_INPUTS) == (
        faults.DEFAULT_SEED,
        faults.DEFAULT_ROUNDS,
        faults.DEFAULT_INPUTS,
    )
    assert cli_bench.LATENCY_WARMUP == latency.DEFAULT_WARMUP
    assert cli_bench.STARTUP_RUNS == startup.DEFAULT_RUNS


def test_a_one_shot_command_loads_no_tool_registry(tmp_path: Path) -> None:
    """The dream's curation pass builds the agent tools on its first call: a command that only saves and
    searches never imports the registry (jsonschema)."""
    home = str(tmp_path / "home")
    loaded = set(
        _fresh(
            "import json, sys, reverie\n"
            f"with reverie.open({home!r}, embedding={{'provider': 'none'}}) as rv:\n"
            "    rv.memory.save('The user is allergic to peanuts')\n"
            "    assert rv.memory.search('peanuts')\n"
            "print(json.dumps(sorted(sys.modules)))"
        )
    )
    assert "reverie.engine" in loaded
    for name in ("jsonschema", "reverie.tools"):
        assert not any(m == name or m.startswith(name + ".") for m in loaded), name
