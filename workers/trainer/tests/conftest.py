"""Fixtures: the hf-tiny model (built once per session), the shared vectors, a reference engine and a
trainer worker (one process each for the whole session: starting one imports torch and transformers,
which is most of a test's time on a loaded 2-core machine)."""

from __future__ import annotations

import json

import pytest

from helpers import (  # noqa: F401 - re-exported for the test modules
    FIXTURE, Proc, generate, http, py, random_sequences, serve_trainer, sha256, wait_file, wait_result, write_batch,
)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """The hf-tiny model directory (make-tiny, seed 0), built once per test session."""
    from rstar_trainer.tiny import make_tiny

    out = str(tmp_path_factory.mktemp("hf-tiny"))
    make_tiny(out, seed=0)
    return out


@pytest.fixture(scope="session")
def fixture_vectors() -> dict:
    with open(FIXTURE) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def engine(tiny_model):
    """A reference engine on the hf-tiny model with room for everything the tests send."""
    p = Proc(py("rstar_trainer.engine", "serve", "--model", tiny_model, "--port", "0", "--kv-capacity-tokens", "8192", "--threads", "1")).wait_listening()
    yield p
    p.stop()


@pytest.fixture(scope="session")
def trainer(tiny_model, tmp_path_factory):
    """A trainer worker on the hf-tiny model (one thread) shared by the tests that need a worker but never
    restart or kill it. Each test trains its own runId; a run other than the one it trained last starts
    its next step from disk (the base model for step 0), as on any worker serving several runs."""
    p = serve_trainer(tiny_model, tmp_path_factory.mktemp("trainer-state"))
    yield p
    p.stop()
