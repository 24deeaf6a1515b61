"""One definition of blank on both sides of the contract (issue 18, point 7).

Every string the contract says must not be blank (the inbox's description,
externalSystem and externalId, sync's two, gather's text) is refused by the
server exactly when the OpenAPI document's `pattern` refuses it, whichever way
a client's validator reads the pattern: as ECMA-262 (what OpenAPI means; Node's
RegExp, and jsonschema-rs, which schemathesis uses) or as Python's `re`
(Python's jsonschema). Before, the pattern was `\\S`: NEL (U+0085) matched it
in ECMA-262 while Python's strip() emptied it, so a "valid" request got 400. Likewise NUL
(U+0000), which the server refuses anywhere in a string ("Null characters are
not allowed."; PostgreSQL cannot store it): schemathesis against the live
server (benchmarks/faults.py) found the document's pattern allowed it, so the
document's pattern (`TEXT_PATTERN`) now refuses it too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable

import jsonschema_rs
import pytest

from commitments.models import Commitment
from gather.serializers import GatherSerializer
from integrations.serializers import InboxSerializer, SyncSerializer
from lib.text import BLANK, NOT_BLANK_PATTERN, TEXT_PATTERN, is_blank, strip_blank
from tests.harness.api import INBOX, assert_envelope, inbox_body, mint, post_json

NEL, NBSP, ZWSP, IDEOGRAPHIC, BOM = "\u0085", "\u00a0", "\u200b", "\u3000", "\ufeff"
BLANKS = {
    "NEL": NEL,
    "NBSP": NBSP,
    "zero-width space": ZWSP,
    "ideographic space": IDEOGRAPHIC,
    "byte order mark": BOM,
    "information separator": "\x1c",
    "ordinary white space": " \t\r\n\x0b\x0c",
    "a mixture": f"{NEL}{NBSP} {ZWSP}{IDEOGRAPHIC}\u2028{BOM}",
}
NOT_BLANK = {
    "a letter": "x",
    "text between blanks": f"{NEL} x {BOM}",
    "an ideograph": "日",
    "an emoji (outside the BMP)": "\U0001f680",
    "a soft hyphen (visible where a line breaks)": "\u00ad",
}

# (schema in the document, field, serializer, a valid body for it)
FIELDS = [
    ("InboxRequest", "description", InboxSerializer, inbox_body()),
    ("InboxRequest", "externalSystem", InboxSerializer, inbox_body()),
    ("InboxRequest", "externalId", InboxSerializer, inbox_body()),
    (
        "SyncRequest",
        "externalSystem",
        SyncSerializer,
        {"externalSystem": "jira", "externalId": "OPS-1", "status": "Completed"},
    ),
    (
        "SyncRequest",
        "externalId",
        SyncSerializer,
        {"externalSystem": "jira", "externalId": "OPS-1", "status": "Completed"},
    ),
    ("GatherRequest", "text", GatherSerializer, {"text": "Ana ships the report by Friday."}),
]
FIELD_IDS = [f"{schema}.{field}" for schema, field, _, _ in FIELDS]


@pytest.fixture(scope="module")
def document(django_db_blocker) -> dict:
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api-reference/openapi.json").json()


def pattern_of(document: dict, schema: str, field: str) -> str:
    return document["components"]["schemas"][schema]["properties"][field]["pattern"]


WITH_NUL = {
    "NUL alone": "\x00",
    "NUL after text": "x\x00",
    "NUL inside text": "x\x00y",
    "NUL before text": "\x00x",
    "NUL between blanks": f"{NEL}\x00{NBSP}",
    "NUL and a final newline": "x\x00\n",
}


def server_refuses_as_blank(serializer_class, body: dict, field: str, value: str) -> bool:
    serializer = serializer_class(data={**body, field: value})
    if serializer.is_valid():
        assert serializer.validated_data[field] == strip_blank(value)
        return False
    assert serializer.errors[field] == ["This field may not be blank."], serializer.errors
    return True


# --- the engines a client's validator may use ------------------------------------------


def python_re(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda value: compiled.search(value) is not None


def jsonschema_rs_ecma(pattern: str) -> Callable[[str], bool]:
    validator = jsonschema_rs.validator_for({"type": "string", "pattern": pattern})
    return validator.is_valid


def node_regexp(pattern: str, values: list[str], flags: str = "") -> list[bool]:
    """Each value tested with `new RegExp(pattern, flags).test(value)` in Node (V8)."""
    script = (
        "const [p, f, vs] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const r = new RegExp(p, f);"
        "process.stdout.write(JSON.stringify(vs.map(v => r.test(v))));"
    )
    result = subprocess.run(
        ["node", "-e", script],
        input=json.dumps([pattern, flags, values]),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(result.stdout)


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
SAMPLES = {**BLANKS, **NOT_BLANK}


# --- serializer and schema agree, field by field -----------------------------------------


@pytest.mark.parametrize(("schema", "field", "serializer_class", "body"), FIELDS, ids=FIELD_IDS)
def test_every_non_blank_field_carries_the_one_pattern(
    document, schema, field, serializer_class, body
):
    assert pattern_of(document, schema, field) == TEXT_PATTERN


@pytest.mark.parametrize(("schema", "field", "serializer_class", "body"), FIELDS, ids=FIELD_IDS)
@pytest.mark.parametrize("sample", list(SAMPLES), ids=list(SAMPLES))
def test_the_server_refuses_exactly_what_the_schema_refuses(
    document, schema, field, serializer_class, body, sample
):
    value = SAMPLES[sample]
    pattern = pattern_of(document, schema, field)
    refused = server_refuses_as_blank(serializer_class, body, field, value)
    assert refused is (sample in BLANKS)
    assert python_re(pattern)(value) is not refused
    assert jsonschema_rs_ecma(pattern)(value) is not refused


@pytest.mark.parametrize(("schema", "field", "serializer_class", "body"), FIELDS, ids=FIELD_IDS)
@pytest.mark.parametrize("sample", list(WITH_NUL), ids=list(WITH_NUL))
def test_a_nul_is_refused_by_the_server_and_by_the_schema(
    document, schema, field, serializer_class, body, sample
):
    value = WITH_NUL[sample]
    pattern = pattern_of(document, schema, field)
    serializer = serializer_class(data={**body, field: value})
    assert not serializer.is_valid()
    # DRF's message alone: the pattern's validator does not add "may not be blank".
    assert serializer.errors[field] == ["Null characters are not allowed."], serializer.errors
    assert python_re(pattern)(value) is False
    assert jsonschema_rs_ecma(pattern)(value) is False


@needs_node
@pytest.mark.parametrize("flags", ["", "u"])
def test_ecma_262_reads_the_pattern_as_the_server_does(document, flags):
    pattern = pattern_of(document, "InboxRequest", "externalSystem")
    values = [*SAMPLES.values(), *WITH_NUL.values()]
    answers = node_regexp(pattern, values, flags)
    assert answers == [not is_blank(value) and "\x00" not in value for value in values]


def test_trimming_takes_the_same_characters_off_the_ends():
    serializer = InboxSerializer(
        data=inbox_body(externalSystem=f"{IDEOGRAPHIC}jira{NEL}", externalId=f"{ZWSP}OPS-1{BOM}")
    )
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data["externalSystem"] == "jira"
    assert serializer.validated_data["externalId"] == "OPS-1"


# --- every character, every engine -----------------------------------------------------


BMP = [chr(code) for code in range(0x10000) if not 0xD800 <= code <= 0xDFFF]


def test_blank_is_what_python_and_ecma_262_call_white_space_and_the_zero_width_characters():
    python_space = {ch for ch in map(chr, range(0x110000)) if ch.isspace()}
    ecma_space = set("\t\n\x0b\x0c\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {
        chr(c) for c in range(0x2000, 0x200B)
    }
    zero_width = set("\u180e\u200b\u200c\u200d\u2060")
    assert python_space | ecma_space | zero_width == BLANK


def test_for_every_character_python_re_and_jsonschema_rs_agree_with_the_server():
    # Each engine's matcher is built once per pattern, then asked of every value.
    not_blank = [python_re(NOT_BLANK_PATTERN), jsonschema_rs_ecma(NOT_BLANK_PATTERN)]
    text = [python_re(TEXT_PATTERN), jsonschema_rs_ecma(TEXT_PATTERN)]
    server = [not is_blank(ch) for ch in BMP]
    for matches in not_blank:
        assert [matches(ch) for ch in BMP] == server
    # The document's pattern: the same, but for NUL; alone and around text.
    accepted = [not is_blank(ch) and ch != "\x00" for ch in BMP]
    framed = [f"{NEL}{ch}x{NBSP}" for ch in BMP]
    expected = [ch != "\x00" for ch in BMP]
    for matches in text:
        assert [matches(ch) for ch in BMP] == accepted
        assert [matches(value) for value in framed] == expected


@needs_node
def test_for_every_character_node_agrees_with_the_server():
    astral = ["\U00010000", "\U0001f680", "\U0010fffd"]
    values = BMP + astral
    server = [not is_blank(ch) for ch in values]
    assert node_regexp(NOT_BLANK_PATTERN, values) == server
    assert node_regexp(NOT_BLANK_PATTERN, values, "u") == server
    accepted = [not is_blank(ch) and ch != "\x00" for ch in values]
    assert node_regexp(TEXT_PATTERN, values) == accepted
    assert node_regexp(TEXT_PATTERN, values, "u") == accepted


def test_the_old_pattern_disagreed_where_this_one_does_not():
    # Why `\S` went: ECMA-262 (jsonschema-rs) says NEL is not white space, Python
    # strips it; and the other way round for the byte order mark.
    assert jsonschema_rs_ecma(r"\S")(NEL) is True and NEL.strip() == ""
    assert python_re(r"\S")(BOM) is True and jsonschema_rs_ecma(r"\S")(BOM) is False
    for engine in (python_re, jsonschema_rs_ecma):
        assert engine(NOT_BLANK_PATTERN)(NEL) is False
        assert engine(NOT_BLANK_PATTERN)(BOM) is False


# --- through the HTTP stack ------------------------------------------------------------


@pytest.mark.parametrize("value", [NEL, ZWSP, IDEOGRAPHIC + NBSP])
def test_a_blank_external_system_is_invalid_payload_over_http(client, assigner, assignee, value):
    token = mint(assigner)
    response = post_json(client, INBOX, inbox_body(externalSystem=value), token=token)
    body = assert_envelope(response, 400, "invalid_payload", details=True)
    assert body["details"] == {"externalSystem": "This field may not be blank."}
    assert not Commitment.objects.exists()


def test_invisible_ends_are_trimmed_over_http(client, assigner, assignee):
    token = mint(assigner)
    body = inbox_body(externalSystem=f"{NEL}jira{ZWSP}", description=f"{IDEOGRAPHIC}Ship it{BOM}")
    response = post_json(client, INBOX, body, token=token)
    assert response.status_code == 201, response.content
    commitment = Commitment.objects.get()
    assert (commitment.external_system, commitment.description) == ("jira", "Ship it")
