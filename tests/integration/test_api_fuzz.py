"""Schemathesis against the live API's own /openapi.json with an admin key: positive and negative cases for
every operation (well over 1,000 in all), none of which may be answered with a 5xx. Client input is never a
server error.

The same check from a shell, against `reverie serve` (see the README):
``schemathesis run http://127.0.0.1:4545/openapi.json -H "Authorization: Bearer $KEY" --checks not_a_server_error``
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode

import reverie

from ._api import client, serving

# Per operation; hypothesis stops sooner on an operation with few distinct inputs. Every operation gets its
# share, and the total stays near the 1,000 cases as operations are added (72 operations: ~1,400).
POSITIVE_EXAMPLES = 15
NEGATIVE_EXAMPLES = 6
MIN_CASES = 1000


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[reverie.Reverie]:
    with reverie.open(tmp_path / "home", embedding={"provider": "hash", "background": False}) as rv:
        yield rv


def _seed(origin: str, secret: str) -> None:
    """Something for the fuzzer to find: entries, a session with turns, working memory."""
    with client(origin, secret) as c:
        for agent in ("default", "a"):
            c.post(f"/api/memory/agents/{agent}/entries", json={"content": f"{agent} keeps Lisbon hours"})
            c.post(
                f"/api/memory/agents/{agent}/sessions/s1/turns", json={"role": "user", "content": "hi", "create": True}
            )
            c.put(f"/api/memory/agents/{agent}/working/note", params={"namespace": "session/s1"}, json={"value": "v"})


@pytest.mark.slow  # about a minute: schemathesis generates each case through hypothesis
def test_no_generated_request_is_answered_with_a_server_error(
    engine: reverie.Reverie, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="reverie")
    secret = engine.keys.create("fuzz", agent_id=None, scopes=["admin"])[1]
    auth = {"Authorization": f"Bearer {secret}"}
    with serving(engine) as origin, requests.Session() as session:
        _seed(origin, secret)
        schema = schemathesis.openapi.from_url(f"{origin}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        cases = 0
        server_errors: list[str] = []

        for operation in operations:
            for mode, examples in (
                (GenerationMode.POSITIVE, POSITIVE_EXAMPLES),
                (GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES),
            ):

                @settings(
                    max_examples=examples,
                    deadline=None,
                    database=None,
                    phases=[Phase.explicit, Phase.generate],  # record failures instead of shrinking them
                    suppress_health_check=list(HealthCheck),
                )
                @given(case=operation.as_strategy(generation_mode=mode))
                def call(case: Case) -> None:
                    nonlocal cases
                    response = case.call(base_url=origin, headers=auth, session=session, timeout=60)
                    cases += 1
                    if response.status_code >= 500:
                        server_errors.append(
                            f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
                        )

                try:
                    call()
                except Unsatisfiable:  # a negative case for an operation with nothing to get wrong
                    assert mode is GenerationMode.NEGATIVE, operation.label

        assert engine.keys.authenticate(secret) is not None  # the fuzzer never locked itself out
    print(f"schemathesis: {cases} cases over {len(operations)} operations, {len(server_errors)} server errors")
    assert not server_errors, "\n".join(server_errors[:20])
    assert cases >= MIN_CASES
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("reverie.api")]
