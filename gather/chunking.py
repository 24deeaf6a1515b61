"""Long text in parts: split at paragraph boundaries into chunks of at most
GATHER_MAX_CHUNK_CHARS (each sent as its own request), then the drafts of
every chunk merged without duplicates and their refusals combined."""

from __future__ import annotations

import re
from dataclasses import replace

from gather.drafts import CONFIDENCE_RANK, Draft
from gather.guards import normalise_for_quote

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


def _duplicate_key(draft: Draft) -> tuple[str, str]:
    who = draft.assignee_email or draft.assignee_name or ""
    return normalise_for_quote(draft.description).rstrip("."), normalise_for_quote(who)


def merge_drafts(batches: list[list[Draft]]) -> list[Draft]:
    """The drafts of every chunk, in text order, without duplicates (same
    normalised description and assignee); of two duplicates the surer one is
    kept, and a deadline one of them lacks is taken from the other."""
    merged: dict[tuple[str, str], Draft] = {}
    for batch in batches:
        for draft in batch:
            key = _duplicate_key(draft)
            kept = merged.get(key)
            if kept is None:
                merged[key] = draft
            elif CONFIDENCE_RANK[draft.confidence] < CONFIDENCE_RANK[kept.confidence]:
                if not draft.deadline and kept.deadline:
                    draft = replace(draft, deadline=kept.deadline, deadline_text=kept.deadline_text)
                merged[key] = draft
            elif not kept.deadline and draft.deadline:
                merged[key] = replace(
                    kept, deadline=draft.deadline, deadline_text=draft.deadline_text
                )
    return list(merged.values())


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
