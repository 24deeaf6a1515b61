"""Extraction: the pasted text → validated draft commitments, through the
user's own OpenAI or Anthropic key.

One schema for both providers (gather.schema): OpenAI structured outputs in
strict mode (Chat Completions, which OpenAI-compatible gateways also speak),
Anthropic a forced tool call whose input schema is the same. Refusals,
truncation and stop reasons are checked before the answer is parsed, so a
cut-off answer is a clean UpstreamFailure, never half a list.

A model that answers with no drafts (it found nothing) gives drafts []. A
model that declines to answer (OpenAI's `message.refusal`, Anthropic's
`stop_reason: "refusal"`) is not a failure either: that part of the text gives
no drafts, and the Extraction carries the model's own words (`refusal`) so the
user knows the text was not read rather than believing it held nothing. The
model and the usage are the provider's, as for any answer (a refusal still
costs tokens). Everything else that is not a usable answer (truncation,
malformed output, HTTP errors, timeouts) is an UpstreamFailure.

Then the deterministic parts, which trust nothing the model says:
- deadlines are read in the user's zone and carry the user's offset;
- addresses only for collaborators, only when unambiguous or settled by an
  address the quoted text writes next to the name (gather.matching);
- the quote guard: a draft whose sourceQuote does not occur in the text
  (whitespace, quotes, dashes and case normalised) is DROPPED, not kept as
  low confidence: a quote that is not there is an invented commitment;
- long text is split on paragraph boundaries into chunks sent concurrently,
  and the drafts merged without duplicates.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import unicodedata
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import anthropic
import openai
from django.conf import settings

from gather.matching import addresses_next_to, match_assignee
from gather.prompt import collaborators_json, new_fence, system_prompt, user_message
from gather.schema import DESCRIPTION_MAX, DRAFT_LIST_SCHEMA, validate_drafts
from gather.selectors import Collaborator

logger = logging.getLogger(__name__)

OPENAI = "openai"
ANTHROPIC = "anthropic"
TOOL_NAME = "record_commitments"
SCHEMA_NAME = "draft_list"
MAX_OUTPUT_TOKENS = 8192  # within both providers' small models' output limits
MAX_WORKERS = 4  # chunks in flight at once per call
DEFAULT_BASE_URLS = {OPENAI: "https://api.openai.com/v1", ANTHROPIC: "https://api.anthropic.com"}
CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}
REFUSAL_MAX = 2000  # characters of the model's refusal passed on


class UpstreamFailure(Exception):
    """The provider did not give a usable answer. `message` is shown to the
    user (the provider's own words where there are some); it never holds the
    key or the text."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class Extraction:
    drafts: list[dict]
    model: str
    usage: dict = field(default_factory=lambda: {"inputTokens": 0, "outputTokens": 0})
    # The model's own words when it declined (all or part of) the text, else None.
    refusal: str | None = None


@dataclass
class _Answer:
    drafts: list[dict]
    model: str
    input_tokens: int
    output_tokens: int
    refusal: str | None = None  # set when the model declined: then drafts is []


def _refusal_words(words: str | None, who: str) -> str:
    words = (words or "").strip()
    if not words:
        return f"{who} declined to answer and gave no reason."
    return words if len(words) <= REFUSAL_MAX else words[: REFUSAL_MAX - 1] + "\u2026"


# -- settings (the "Gather" section of config/settings.py) ------------------


def _timeout() -> float:
    return float(settings.GATHER_PROVIDER_TIMEOUT)


def _max_chunk_chars() -> int:
    return int(settings.GATHER_MAX_CHUNK_CHARS)


def _base_url(provider: str) -> str:
    # Passed explicitly, so the SDK never reads its own *_BASE_URL variable.
    name = "OPENAI_BASE_URL" if provider == OPENAI else "ANTHROPIC_BASE_URL"
    return getattr(settings, name, None) or DEFAULT_BASE_URLS[provider]


# -- provider calls ---------------------------------------------------------


def _provider_message(exc: Exception) -> str:
    """The provider's own error message, from the error body where there is one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    message = getattr(exc, "message", None) or str(exc)
    return message


def _call_openai(*, api_key: str, model: str, system: str, user: str) -> _Answer:
    client = openai.OpenAI(
        api_key=api_key,
        base_url=_base_url(OPENAI),
        max_retries=0,
        timeout=_timeout(),
    )
    # The SDK fills these from OPENAI_ORG_ID / OPENAI_PROJECT_ID / OPENAI_ADMIN_KEY
    # when not given; none of the server's environment may ride on a user's call.
    client.organization = None
    client.project = None
    client.admin_api_key = None
    try:
        completion = client.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": DRAFT_LIST_SCHEMA},
            },
            max_completion_tokens=MAX_OUTPUT_TOKENS,
        )
    except openai.APITimeoutError:
        raise UpstreamFailure("OpenAI did not answer in time.") from None
    except openai.APIStatusError as exc:
        raise UpstreamFailure(f"OpenAI: {_provider_message(exc)}", status=exc.status_code) from None
    except openai.APIConnectionError:
        raise UpstreamFailure("OpenAI could not be reached.") from None
    except (openai.OpenAIError, ValueError) as exc:
        raise UpstreamFailure(
            f"OpenAI answered with something unreadable: {type(exc).__name__}."
        ) from None
    finally:
        client.close()

    if not getattr(completion, "choices", None):
        raise UpstreamFailure("OpenAI answered with no choices.")
    choice = completion.choices[0]
    message = choice.message
    usage = completion.usage
    input_tokens = getattr(usage, "prompt_tokens", 0) or 0
    output_tokens = getattr(usage, "completion_tokens", 0) or 0
    refusal = getattr(message, "refusal", None)
    if refusal:
        return _Answer(
            drafts=[],
            model=completion.model or model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            refusal=_refusal_words(refusal, "OpenAI"),
        )
    if choice.finish_reason == "length":
        raise UpstreamFailure(
            "OpenAI's answer was cut off (output token limit); try a shorter text."
        )
    if choice.finish_reason == "content_filter":
        raise UpstreamFailure("OpenAI's content filter stopped the answer.")
    if choice.finish_reason not in ("stop", None):
        raise UpstreamFailure(f"OpenAI stopped unexpectedly ({choice.finish_reason}).")
    if not message.content:
        raise UpstreamFailure("OpenAI answered with no content.")
    try:
        data = json.loads(message.content)
    except ValueError:
        raise UpstreamFailure("OpenAI's answer was not valid JSON.") from None
    return _Answer(
        drafts=_raw_drafts(data, "OpenAI"),
        model=completion.model or model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def _call_anthropic(*, api_key: str, model: str, system: str, user: str) -> _Answer:
    client = anthropic.Anthropic(
        api_key=api_key,  # explicit: the SDK then reads no credential from the environment
        base_url=_base_url(ANTHROPIC),
        max_retries=0,
        timeout=_timeout(),
    )
    try:
        message = client.messages.create(
            model=model,
            max_tokens=MAX_OUTPUT_TOKENS,
            system=system,
            messages=[{"role": "user", "content": user}],
            tools=[
                {
                    "name": TOOL_NAME,
                    "description": "Record the commitments in the text (an empty list if none).",
                    "input_schema": DRAFT_LIST_SCHEMA,
                }
            ],
            tool_choice={"type": "tool", "name": TOOL_NAME},
        )
    except anthropic.APITimeoutError:
        raise UpstreamFailure("Anthropic did not answer in time.") from None
    except anthropic.APIStatusError as exc:
        raise UpstreamFailure(
            f"Anthropic: {_provider_message(exc)}", status=exc.status_code
        ) from None
    except anthropic.APIConnectionError:
        raise UpstreamFailure("Anthropic could not be reached.") from None
    except (anthropic.AnthropicError, ValueError) as exc:
        raise UpstreamFailure(
            f"Anthropic answered with something unreadable: {type(exc).__name__}."
        ) from None
    finally:
        client.close()

    usage = message.usage
    input_tokens = getattr(usage, "input_tokens", 0) or 0
    output_tokens = getattr(usage, "output_tokens", 0) or 0
    stop = getattr(message, "stop_reason", None)
    if stop == "refusal":
        # Only the text blocks are the model's words; a tool call it began
        # before declining is not an answer.
        text = " ".join(
            getattr(b, "text", "") or ""
            for b in message.content or []
            if getattr(b, "type", None) == "text"
        )
        return _Answer(
            drafts=[],
            model=getattr(message, "model", None) or model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            refusal=_refusal_words(text, "Anthropic"),
        )
    if stop == "max_tokens":
        raise UpstreamFailure(
            "Anthropic's answer was cut off (output token limit); try a shorter text."
        )
    if stop not in ("tool_use", "end_turn", "stop_sequence"):
        raise UpstreamFailure(f"Anthropic stopped unexpectedly ({stop}).")
    calls = [
        b
        for b in message.content or []
        if getattr(b, "type", None) == "tool_use" and b.name == TOOL_NAME
    ]
    if not calls:
        raise UpstreamFailure("Anthropic answered without the requested structured output.")
    return _Answer(
        drafts=_raw_drafts(calls[0].input, "Anthropic"),
        model=getattr(message, "model", None) or model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


_CALLS: dict[str, Callable[..., _Answer]] = {OPENAI: _call_openai, ANTHROPIC: _call_anthropic}


def _raw_drafts(data: object, who: str) -> list[dict]:
    """The model's drafts, structurally checked (the schema's shape) but with
    deadlines and addresses not yet trusted."""
    if not isinstance(data, dict) or not isinstance(data.get("drafts"), list):
        raise UpstreamFailure(f"{who}'s answer did not follow the draft-list schema.")
    drafts = []
    for draft in data["drafts"]:
        if not isinstance(draft, dict):
            raise UpstreamFailure(f"{who}'s answer did not follow the draft-list schema.")
        draft = dict(draft)
        # A deadline or address the model botched is dropped here, not fatal:
        # the deterministic steps below decide what stays.
        draft["deadline"] = (
            draft.get("deadline") if isinstance(draft.get("deadline"), str) else None
        )
        draft["assigneeEmail"] = (
            None if not isinstance(draft.get("assigneeEmail"), str) else draft["assigneeEmail"]
        )
        if isinstance(draft.get("description"), str):
            draft["description"] = draft["description"].strip()[:DESCRIPTION_MAX]
        drafts.append(draft)
    try:
        validate_drafts(
            {"drafts": [{**d, "deadline": None, "assigneeEmail": None} for d in drafts]}
        )
    except ValueError as exc:
        raise UpstreamFailure(
            f"{who}'s answer did not follow the draft-list schema: {exc}"
        ) from None
    return drafts


# -- the deterministic parts --------------------------------------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "`": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
    }
)
_WHITESPACE = re.compile(r"\s+")
_QUOTE_MARKERS = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)  # e-mail "> " quoting


def normalise_for_quote(text: str) -> str:
    """Text as the quote guard compares it: NFKC, quotes and dashes made plain,
    e-mail quoting markers ("> ") removed, whitespace collapsed, case folded."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _QUOTE_MARKERS.sub("", text)
    return _WHITESPACE.sub(" ", text).strip().casefold()


def quote_occurs(quote: str, normalised_text: str) -> bool:
    """Whether the quote occurs in the (normalised) text; quote marks or an
    ellipsis the model put around the quote do not count against it."""
    wanted = normalise_for_quote(quote).strip(" \"'.").strip()
    if not wanted:
        return False
    return wanted in normalised_text


def normalise_deadline(value: str | None, *, now: dt.datetime) -> str | None:
    """The model's deadline in the user's zone, with the user's offset: a
    deadline without an offset is read in the user's zone, a bare date means
    17:00 that day; an unreadable one becomes null (deadlineText keeps the
    phrase)."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            day = dt.date.fromisoformat(value)
            moment = dt.datetime.combine(day, dt.time(17, 0))
        else:
            moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    zone = now.tzinfo
    if moment.utcoffset() is None:
        moment = moment.replace(tzinfo=zone)
        # A wall time that does not exist or is ambiguous (DST) is settled by
        # a round trip through UTC.
        moment = moment.astimezone(dt.UTC).astimezone(zone)
    else:
        moment = moment.astimezone(zone)
    return moment.isoformat(timespec="seconds")


def _duplicate_key(draft: dict) -> tuple[str, str]:
    who = draft["assigneeEmail"] or draft.get("assigneeName") or ""
    return normalise_for_quote(draft["description"]).rstrip("."), normalise_for_quote(who)


def merge_drafts(batches: list[list[dict]]) -> list[dict]:
    """The drafts of every chunk, in text order, without duplicates (same
    normalised description and assignee); of two duplicates the surer one is
    kept, and a deadline one of them lacks is taken from the other."""
    merged: dict[tuple[str, str], dict] = {}
    for batch in batches:
        for draft in batch:
            key = _duplicate_key(draft)
            kept = merged.get(key)
            if kept is None:
                merged[key] = draft
                continue
            if CONFIDENCE_RANK[draft["confidence"]] < CONFIDENCE_RANK[kept["confidence"]]:
                if not draft["deadline"] and kept["deadline"]:
                    draft = {
                        **draft,
                        "deadline": kept["deadline"],
                        "deadlineText": kept["deadlineText"],
                    }
                merged[key] = draft
            elif not kept["deadline"] and draft["deadline"]:
                kept["deadline"], kept["deadlineText"] = draft["deadline"], draft["deadlineText"]
    return list(merged.values())


def finish_drafts(
    raw: list[dict], *, text: str, now: dt.datetime, collaborators: list[Collaborator]
) -> list[dict]:
    """One chunk's model drafts made trustworthy: quote guard, deadlines in the
    user's zone, addresses only for collaborators (an address the quote writes
    next to the name may settle which one)."""
    normalised_text = normalise_for_quote(text)
    finished = []
    for draft in raw:
        quote = draft.get("sourceQuote") or ""
        if not quote_occurs(quote, normalised_text):
            logger.info("gather: dropped a draft whose quote is not in the text")
            continue
        name = draft.get("assigneeName")
        name = name.strip() or None if isinstance(name, str) else None
        finished.append(
            {
                **draft,
                "assigneeName": name,
                "assigneeEmail": match_assignee(
                    name=name,
                    email=draft.get("assigneeEmail"),
                    collaborators=collaborators,
                    written=addresses_next_to(name, quote),
                ),
                "deadline": normalise_deadline(draft.get("deadline"), now=now),
            }
        )
    return validate_drafts({"drafts": finished})


# -- chunking -----------------------------------------------------------------

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")


def _pack(pieces: list[str], limit: int, joiner: str) -> list[str]:
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}{joiner}{piece}" if current else piece
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            chunks.append(current)
        current = piece
    if current:
        chunks.append(current)
    return chunks


def split_text(text: str, limit: int) -> list[str]:
    """The text in chunks of at most `limit` characters, cut at paragraph
    boundaries; a paragraph longer than a chunk is cut at sentence or line
    ends, and a sentence longer than a chunk at the limit."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    pieces: list[str] = []
    for paragraph in (p.strip() for p in _PARAGRAPH.split(text)):
        if not paragraph:
            continue
        if len(paragraph) <= limit:
            pieces.append(paragraph)
            continue
        sentences = []
        for sentence in (s.strip() for s in _SENTENCE.split(paragraph)):
            while len(sentence) > limit:
                sentences.append(sentence[:limit])
                sentence = sentence[limit:]
            if sentence:
                sentences.append(sentence)
        # Keep a long paragraph's pieces as separate units so a chunk never
        # glues the end of one paragraph to a cut-off sentence of another.
        pieces.extend(_pack(sentences, limit, " "))
    return _pack(pieces, limit, "\n\n")


# -- the entry point ----------------------------------------------------------


def _call_args(*, chunk: str, part: int, parts: int, now: dt.datetime, roster: str) -> dict:
    """The prompt of one upstream request, with a fence of its own."""
    fence = new_fence(chunk, roster)
    return {
        "system": system_prompt(now=now, fence=fence),
        "user": user_message(
            text=chunk, collaborators_data=roster, fence=fence, part=part, parts=parts
        ),
    }


def _parts(numbers: list[int], parts: int) -> str:
    if len(numbers) == 1:
        return f"Part {numbers[0]} of {parts}"
    listed = ", ".join(str(n) for n in numbers[:-1])
    return f"Parts {listed} and {numbers[-1]} of {parts}"


def combine_refusals(refusals: list[str | None]) -> str | None:
    """The refusal of a whole call from those of its chunks (None where a chunk
    was answered): one chunk's words as they are; with several chunks, each
    distinct wording once, saying which parts of the text it declined."""
    if len(refusals) == 1:
        return refusals[0]
    by_words: dict[str, list[int]] = {}
    for part, words in enumerate(refusals, start=1):
        if words:
            by_words.setdefault(words, []).append(part)
    if not by_words:
        return None
    return "\n".join(
        f"{_parts(numbers, len(refusals))}: {words}" for words, numbers in by_words.items()
    )


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
    (a refusal is none: see the module's text); the whole call, chunks
    included, gives up after twice the provider timeout."""
    if provider not in _CALLS:
        raise UpstreamFailure(f"Unknown provider {provider!r}.")
    if not api_key:
        raise UpstreamFailure("The stored provider key is empty.")
    if now.tzinfo is None:
        raise ValueError("now must be aware, in the user's time zone")
    call = _CALLS[provider]
    roster = collaborators_json(collaborators)
    chunks = split_text(text, _max_chunk_chars())
    if not chunks:
        return Extraction(drafts=[], model=model)

    executor = ThreadPoolExecutor(
        max_workers=min(MAX_WORKERS, len(chunks)), thread_name_prefix="gather"
    )
    try:
        futures = [
            executor.submit(
                call,
                api_key=api_key,
                model=model,
                **_call_args(chunk=chunk, part=index, parts=len(chunks), now=now, roster=roster),
            )
            for index, chunk in enumerate(chunks, start=1)
        ]
        done, pending = wait(futures, timeout=2 * _timeout(), return_when=FIRST_EXCEPTION)
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
        finish_drafts(answer.drafts, text=chunk, now=now, collaborators=collaborators)
        for answer, chunk in zip(answers, chunks, strict=True)
    ]
    return Extraction(
        drafts=validate_drafts({"drafts": merge_drafts(batches)}),
        model=answers[0].model,
        usage={
            "inputTokens": sum(a.input_tokens for a in answers),
            "outputTokens": sum(a.output_tokens for a in answers),
        },
        refusal=combine_refusals([a.refusal for a in answers]),
    )
