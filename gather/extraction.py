"""Extraction: the pasted text → draft commitments, through the user's own
OpenAI or Anthropic key. This module is the orchestration; each concern has
its own:

- `gather.providers`: one class per provider (the SDK call, refusals, stop
  reasons, errors as UpstreamFailure), behind a registry;
- `gather.drafts`: the typed Draft, checked once where an answer is parsed;
- `gather.prompt`: what the model is sent, fenced;
- `gather.guards`: the quote guard, the address guard (`gather.matching`),
  deadlines in the user's zone;
- `gather.chunking`: long text in parts sent concurrently, the drafts merged
  without duplicates and the parts' refusals combined.

A model that answers no drafts gives none; a model that declines is no
failure either (the Extraction carries its words in `refusal`); everything
else that is not a usable answer is an UpstreamFailure.
"""

from __future__ import annotations

import datetime as dt
import logging
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import reduce
from operator import add

from django.conf import settings

from gather.chunking import combine_refusals, merge_drafts, split_text
from gather.drafts import Draft, Usage
from gather.guards import guard_drafts
from gather.prompt import collaborators_json, new_fence, system_prompt, user_message
from gather.providers import UpstreamFailure, provider_for
from gather.selectors import Collaborator

__all__ = ["Extraction", "UpstreamFailure", "extract"]

logger = logging.getLogger(__name__)

MAX_WORKERS = 4  # chunks in flight at once per call


@dataclass(frozen=True)
class Extraction:
    """What POST /api/gather answers (gather.serializers.GatherResultSerializer)."""

    drafts: list[Draft]
    model: str
    usage: Usage = field(default_factory=Usage)
    # The model's own words when it declined (all or part of) the text, else None.
    refusal: str | None = None


def _prompt(*, chunk: str, part: int, parts: int, now: dt.datetime, roster: str) -> dict:
    """The prompt of one upstream request, with a fence of its own."""
    fence = new_fence(chunk, roster)
    return {
        "system": system_prompt(now=now, fence=fence),
        "user": user_message(
            text=chunk, collaborators_data=roster, fence=fence, part=part, parts=parts
        ),
    }


def extract(
    *,
    provider: str,
    api_key: str,
    model: str,
    text: str,
    now: dt.datetime,
    collaborators: list[Collaborator],
) -> Extraction:
    """Draft commitments from `text` with the user's key. `now` is aware, in
    the user's time zone. Raises UpstreamFailure for every provider failure
    (a refusal is none); the whole call, chunks included, gives up after
    twice the provider timeout."""
    client = provider_for(provider)
    if not api_key:
        raise UpstreamFailure("The stored model key is empty.")
    if now.tzinfo is None:
        raise ValueError("now must be aware, in the user's time zone")
    roster = collaborators_json(collaborators)
    chunks = split_text(text, int(settings.GATHER_MAX_CHUNK_CHARS))
    if not chunks:
        return Extraction(drafts=[], model=model)

    executor = ThreadPoolExecutor(
        max_workers=min(MAX_WORKERS, len(chunks)), thread_name_prefix="gather"
    )
    try:
        futures = [
            executor.submit(
                client.ask,
                api_key=api_key,
                model=model,
                **_prompt(chunk=chunk, part=index, parts=len(chunks), now=now, roster=roster),
            )
            for index, chunk in enumerate(chunks, start=1)
        ]
        done, pending = wait(futures, timeout=2 * client.timeout, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future in done and future.exception() is not None:
                error = future.exception()
                if isinstance(error, UpstreamFailure):
                    raise error
                logger.exception("gather: provider call failed", exc_info=error)
                raise UpstreamFailure("The provider call failed.")
        if pending:
            raise UpstreamFailure("The provider did not answer in time.")
        answers = [future.result() for future in futures]
    finally:
        # Chunks still in flight end by their own timeout; nobody waits for them.
        executor.shutdown(wait=False, cancel_futures=True)

    batches = [
        guard_drafts(answer.drafts, text=chunk, now=now, collaborators=collaborators)
        for answer, chunk in zip(answers, chunks, strict=True)
    ]
    return Extraction(
        drafts=merge_drafts(batches),
        model=answers[0].model,
        usage=reduce(add, (a.usage for a in answers)),
        refusal=combine_refusals([a.refusal for a in answers]),
    )
