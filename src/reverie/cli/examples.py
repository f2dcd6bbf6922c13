"""An example for every command, shown at the end of its ``--help`` (the command's epilog).

``EXAMPLES`` maps a command's path (``"memory kv set"``) to the command lines its help shows; ``add_examples``
puts them into the Typer app before the command line is built. A command whose own docstring or epilog already
has an ``Example:`` keeps it (and needs no line here). tests/integration/test_cli_conventions.py checks that
every command's help ends with one. Light: plain data and typer only (it is imported by every ``reverie`` run).
"""

from __future__ import annotations

import typer

EXAMPLES: dict[str, tuple[str, ...]] = {
    # -- the store ---------------------------------------------------------------------------------------
    "status": ("reverie status", "reverie --home ./notes status --json"),
    "doctor": ("reverie doctor", "reverie doctor --repair"),
    "backup": ("reverie backup ~/reverie-2026-01-01.db",),
    "restore-backup": ("reverie restore-backup ~/reverie-2026-01-01.db",),
    "vacuum": ("reverie vacuum",),
    "copy": ("reverie copy ~/.reverie postgresql://localhost/reverie",),
    "migrate": ("reverie migrate --dry-run", "reverie migrate"),
    "demo": ("reverie demo", "reverie demo --keep ./demo-home"),
    "mcp": ("reverie mcp --agent coder", "reverie mcp --transport http --port 4546"),
    "serve": ("reverie serve", "reverie serve --host 0.0.0.0 --port 8080 --workers 2"),
    "usage": ("reverie usage --from 2026-01-01 --to 2026-01-31",),
    "cost": ("reverie cost --from 2026-01-01 --to 2026-01-31 --csv > january.csv",),
    # -- long-term memory (`memory list` and `memory search` carry their own) ------------------------------
    "memory save": (
        'reverie memory save "The user prefers dark mode" -c user-preferences/ui -t ui',
        'echo "Deploys happen on Fridays" | reverie memory save - -q',
    ),
    "memory get": ("reverie memory get 3f9a0c1d2e4b",),
    "memory explain": ("reverie memory explain 3f9a0c1d2e4b --json",),
    "memory lint": ("reverie memory lint -c user-preferences",),
    "memory edit": ('reverie memory edit 3f9a0c1d2e4b --content "The user prefers light mode"',),
    "memory delete": ("reverie memory delete 3f9a0c1d2e4b",),
    "memory restore": ("reverie memory restore 3f9a0c1d2e4b",),
    "memory history": ("reverie memory history 3f9a0c1d2e4b", "reverie memory history 3f9a0c1d2e4b --restore 1"),
    "memory importance": ("reverie memory importance 3f9a0c1d2e4b 0.9",),
    "memory pin": ("reverie memory pin 3f9a0c1d2e4b", "reverie memory pin 3f9a0c1d2e4b --off"),
    "memory purge": ("reverie memory purge --agent coder",),
    "memory kv set": (
        "reverie memory kv set user:preference:theme dark",
        "reverie memory kv set limits '{\"max\": 5}'",
    ),
    "memory kv update": ("reverie memory kv update project:version 2.1 --string --expected-version 3",),
    "memory kv get": ("reverie memory kv get user:preference:theme",),
    "memory kv delete": ("reverie memory kv delete user:preference:theme",),
    "memory kv list": ("reverie memory kv list --prefix user: -n 50",),
    # -- benchmarks --------------------------------------------------------------------------------------
    "bench recall": ("reverie bench recall --dataset everyday", "reverie bench recall --dataset locomo locomo10.json"),
    "bench latency": ("reverie bench latency --n 10000 --searches 200",),
    "bench dedup": ("reverie bench dedup --facts 200",),
    "bench truth": ("reverie bench truth --facts 100",),
    "bench longrun": ("reverie bench longrun --days 30 --embedder hash",),
    "bench faults": ("reverie bench faults --families fuzz,corruption --rounds 20",),
    "bench load": ("reverie bench load --clients 8 --seconds 10",),
    "bench startup": ("reverie bench startup --runs 3 --json",),
    # -- aging, the dream and the audit ------------------------------------------------------------------
    "maintain decay": ("reverie maintain decay --agent coder",),
    "maintain forget": ("reverie maintain forget --agent coder",),
    "dream run": ("reverie dream run --agent coder",),
    "dream status": ("reverie dream status --agent coder --json",),
    "dream abort": ("reverie dream abort --agent coder",),
    "dream history": ("reverie dream history --agent coder -n 5",),
    "dream enable": ("reverie dream enable --agent coder",),
    "dream disable": ("reverie dream disable --agent coder",),
    "dream serve": ("reverie dream serve",),
    "audit run": ("reverie audit run --json",),
    "audit resume": ("reverie audit resume",),
    # -- conversation memory -----------------------------------------------------------------------------
    "session create": ('reverie session create --name "Planning the launch"',),
    "session list": ("reverie session list --agent coder",),
    "session info": ("reverie session info 7c1e2f",),
    "session delete": ("reverie session delete 7c1e2f",),
    "session export": ("reverie session export 7c1e2f > session.json",),
    "session add": (
        'reverie session add 7c1e2f user "Book the 9:15 train" --create',
        "git log -1 --format=%s | reverie session add 7c1e2f assistant -",
    ),
    "session compact": ("reverie session compact 7c1e2f", "reverie session compact --all --force"),
    "session compaction-status": ("reverie session compaction-status --json",),
    # -- API keys ----------------------------------------------------------------------------------------
    "keys create": ("reverie keys create ci --agent coder --scope memory_read", "reverie keys create ops --admin"),
    "keys list": ("reverie keys list --json",),
    "keys bind": ("reverie keys bind 3f9a0c1d2e4b --user u1 --user u2",),
    "keys revoke": ("reverie keys revoke 3f9a0c1d2e4b",),
    # -- knowledge graph ---------------------------------------------------------------------------------
    "kg add-entity": ('reverie kg add-entity --type person --name "Ana Lima" --properties \'{"role": "cto"}\'',),
    "kg list-entities": ("reverie kg list-entities --type person -n 20",),
    "kg search-entities": ("reverie kg search-entities ana",),
    "kg add-relation": ('reverie kg add-relation --from "person:Ana Lima" --relation works_at --to company:acme',),
    "kg list-relations": ('reverie kg list-relations --entity "person:Ana Lima" --all',),
    "kg query": ("reverie kg query --relation works_at --to company:acme",),
    "kg path": ('reverie kg path --from "person:Ana Lima" --to city:porto',),
    "kg subgraph": ("reverie kg subgraph --entity company:acme --depth 1",),
    "kg merge": ("reverie kg merge 1a2b3c 4d5e6f",),
    "kg invalidate": ("reverie kg invalidate 9f8e7d",),
    # -- skills, feedback and logs -----------------------------------------------------------------------
    "skills list": ("reverie skills list -p mcp",),
    "skills show": ("reverie skills show mcp/email", "reverie skills show mcp/email --version 1"),
    "skills search": ('reverie skills search "send an email"',),
    "skills save": ('reverie skills save mcp/email - -s "How to send an email" < email.md',),
    "skills archive": ("reverie skills archive mcp/email",),
    "skills restore": ("reverie skills restore mcp/email", "reverie skills restore mcp/email --version 2"),
    "skills history": ("reverie skills history mcp/email",),
    "skills usage": ("reverie skills usage --days 7", "reverie skills usage --session s1 --use mcp/email"),
    "feedback record": (
        "reverie feedback record session_summary -s s1 -r good",
        'reverie feedback record correction -s s1 -c "wrong time zone" --entry 3f9a0c1d2e4b',
    ),
    "feedback list": ("reverie feedback list --days 7 -k correction",),
    "executions record": ('reverie executions record "Deploy the site" --success --step build=ok --step upload=ok',),
    "executions list": ("reverie executions list --days 7",),
    "tool-calls record": ('reverie tool-calls record web_search --failed -e "timeout after 30 s" --duration-ms 30000',),
    "tool-calls list": ("reverie tool-calls list -t web_search",),
    "logs export": ("reverie logs export tool-calls -o tool-calls.jsonl", "reverie logs export conversation -a coder"),
    # -- proactive memory --------------------------------------------------------------------------------
    "proactive memorize": ('reverie proactive memorize "I moved to Porto last month" -u u1',),
    "proactive retrieve": ('reverie proactive retrieve "where should we meet?" -u u1',),
    "proactive list": ("reverie proactive list -u u1",),
    "proactive consolidate": ("reverie proactive consolidate -u u1",),
    "proactive sweep": ("reverie proactive sweep --if-due",),
}


def epilog(lines: tuple[str, ...]) -> str:
    """The help's example block: ``\\b`` keeps Click from rewrapping the command lines."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


def add_examples(app: typer.Typer, prefix: str = "") -> None:
    """Give every command of ``app`` (and of its sub-apps) without an example of its own the one in
    ``EXAMPLES``, as its epilog. Call it once every command is registered, before the app runs."""
    for command in app.registered_commands:
        callback = command.callback
        name = command.name or (callback.__name__.strip("_").replace("_", "-") if callback else "")
        own = f"{callback.__doc__ if callback else ''}{command.help or ''}{command.epilog or ''}"
        path = f"{prefix}{name}"
        if "Example:" not in own and path in EXAMPLES:
            command.epilog = epilog(EXAMPLES[path])
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            add_examples(group.typer_instance, f"{prefix}{group.name} ")
