"""Realistic sample texts (tests/gather/samples/*.yaml), each with what the
fake model answers and what the deterministic parts of extraction must turn
that into: the prompt (the user's local date, weekday and offset), deadlines
in the user's zone, names matched only to collaborators and only when
unambiguous, the quote guard, chunking and merging.

A sample file holds: title, provider, timezone, now (local wall time),
collaborators ([name, email] pairs), text, model (the drafts the fake model
answers; with chunks, each chunk gets those whose quote is in it, and those
marked `anywhere: true` in every chunk), expected (each `{from: i, ...}`: the
model's draft i with the listed fields changed), and optionally
prompt_contains (phrases of the system prompt), max_chunk_chars and
min_requests. Every request must carry the collaborators as JSON data and the
text inside its own fence."""

from __future__ import annotations

import datetime as dt
import json
import re
import zoneinfo
from pathlib import Path

import pytest
import yaml

from gather.extraction import extract
from gather.schema import DRAFT_FIELDS
from gather.selectors import Collaborator
from gather.serializers import GatherResultSerializer

SAMPLES = sorted((Path(__file__).parent / "samples").glob("*.yaml"))


def as_json(result) -> dict:
    """An extraction as POST /api/gather answers it (the contract's camelCase JSON)."""
    return json.loads(json.dumps(GatherResultSerializer(result).data))


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _as_model_answers(draft: dict) -> dict:
    return {name: draft[name] for name in DRAFT_FIELDS}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_there_are_at_least_twenty_samples():
    assert len(SAMPLES) >= 20


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample(path, fake_provider, settings):
    sample = load(path)
    zone = zoneinfo.ZoneInfo(sample["timezone"])
    now = dt.datetime.fromisoformat(sample["now"]).replace(tzinfo=zone)
    collaborators = [Collaborator(name=n, email=e) for n, e in sample["collaborators"]]
    if sample.get("max_chunk_chars"):
        settings.GATHER_MAX_CHUNK_CHARS = sample["max_chunk_chars"]
    limit = settings.GATHER_MAX_CHUNK_CHARS
    model = sample["model"]
    chunked = len(sample["text"]) > limit

    def answer(request):
        if not chunked:
            return [_as_model_answers(d) for d in model]
        chunk = _squash(request.user_text)
        return [
            _as_model_answers(d)
            for d in model
            if d.get("anywhere") or _squash(d["sourceQuote"]).rstrip(".") in chunk
        ]

    fake_provider.respond(answer, default=True)

    result = extract(
        provider=sample["provider"],
        api_key="sk-sample-key",
        model="sample-model",
        text=sample["text"],
        now=now,
        collaborators=collaborators,
    )

    expected = [
        {**_as_model_answers(model[e["from"]]), **{k: v for k, v in e.items() if k != "from"}}
        for e in sample["expected"]
    ]
    assert as_json(result)["drafts"] == expected, sample["title"]

    requests = fake_provider.requests
    assert len(requests) >= sample.get("min_requests", 1)
    if not chunked:
        assert len(requests) == 1
    for request in requests:
        assert request.key == "sk-sample-key"
        for phrase in sample.get("prompt_contains", []):
            assert phrase in request.system_text, phrase
        # The collaborators go as JSON data, each with their name and address.
        assert request.collaborators == [
            {"name": n, "email": e} for n, e in sample["collaborators"]
        ]
        assert len(request.source_text) <= limit
    # Every word of the text went to the model, in order, once across the chunks.
    sent = " ".join(r.source_text for r in sorted(requests, key=lambda r: _part(r.user_text)))
    assert sent.split() == sample["text"].split()


def _part(user_text: str) -> int:
    found = re.match(r"Part (\d+) of", user_text)
    return int(found.group(1)) if found else 1
