"""A fake language-model provider: a real HTTP server on loopback that the real
`openai` and `anthropic` SDKs reach through their base URLs (the SDKs speak
httpx2, which respx does not intercept, so the seam is the socket).

It speaks enough of the OpenAI Chat Completions API (`POST /v1/chat/completions`)
and the Anthropic Messages API (`POST /v1/messages`) for the SDK calls that
gather.extraction makes, and it records every request (path, headers with
their Authorization / x-api-key, JSON body).

Script it per test; each request takes the next scripted behaviour, and once
the script is used up the default one (an answer with no drafts)::

    fake_provider.answer([draft(...)])            # the next request answers these drafts
    fake_provider.refuse()                        # the model declines to answer
    fake_provider.invalid_key()                   # 401
    fake_provider.quota(retry_after=30)           # 429 with Retry-After
    fake_provider.missing_model()                 # 404 model not found
    fake_provider.hang()                          # no answer until the client gives up
    fake_provider.malformed()                     # output that is not the schema's JSON
    fake_provider.truncated()                     # finish_reason "length" / "max_tokens"
    fake_provider.garbage()                       # HTTP 200 whose body is not JSON
    fake_provider.respond(lambda request: ...)    # decide per request (chunks arrive concurrently)

Every scripting call takes `times=` (default 1); `default=True` makes it the
behaviour for every request after the script.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI = "openai"
ANTHROPIC = "anthropic"

REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


def draft(
    description: str,
    source_quote: str,
    *,
    assignee_name: str | None = None,
    assignee_email: str | None = None,
    deadline: str | None = None,
    deadline_text: str | None = None,
    confidence: str = "high",
) -> dict:
    """A draft as the model answers it (the draft-list schema's field names)."""
    return {
        "description": description,
        "assigneeName": assignee_name,
        "assigneeEmail": assignee_email,
        "deadline": deadline,
        "deadlineText": deadline_text,
        "confidence": confidence,
        "sourceQuote": source_quote,
    }


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or the raw text when it was not JSON

    @property
    def api(self) -> str:
        return ANTHROPIC if self.path.rstrip("/").endswith("/messages") else OPENAI

    @property
    def user_text(self) -> str:
        """The text of the user messages (where the pasted text goes)."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        parts: list[str] = []
        for message in messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            else:
                parts.extend(block.get("text", "") for block in content or [])
        return "\n".join(parts)

    @property
    def system_text(self) -> str:
        """The system prompt (OpenAI: system/developer messages; Anthropic: `system`)."""
        if not isinstance(self.body, dict):
            return ""
        if self.api == ANTHROPIC:
            system = self.body.get("system") or ""
            if isinstance(system, list):
                return "\n".join(block.get("text", "") for block in system)
            return system
        return "\n".join(
            m["content"]
            if isinstance(m["content"], str)
            else "".join(b.get("text", "") for b in m["content"])
            for m in self.body.get("messages", [])
            if m.get("role") in ("system", "developer")
        )

    @property
    def fence_token(self) -> str:
        """The random token of this request's fence, as the system prompt names it."""
        found = re.search(r"<source_text_([0-9a-f]+)>", self.system_text)
        assert found, "the system prompt names no fence"
        return found.group(1)

    def fenced(self, tag: str) -> str:
        """The data between this request's <tag_TOKEN> and </tag_TOKEN> in the
        user message; the fence must occur exactly once."""
        opening, closing = f"<{tag}_{self.fence_token}>\n", f"\n</{tag}_{self.fence_token}>"
        text = self.user_text
        assert text.count(opening) == 1 and text.count(closing) == 1, tag
        return text.split(opening, 1)[1].split(closing, 1)[0]

    @property
    def source_text(self) -> str:
        """The pasted text (or chunk) as fenced in the data part."""
        return self.fenced("source_text")

    @property
    def collaborators(self) -> list[dict]:
        """The collaborators the data part lists (its JSON, parsed)."""
        return json.loads(self.fenced("collaborators"))

    @property
    def key(self) -> str | None:
        """The credential the request carried (Bearer token or x-api-key)."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth else None


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict → JSON; str → sent as is
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


Behaviour = Callable[[RecordedRequest], Reply]


def _usage(request: RecordedRequest, input_tokens: int, output_tokens: int) -> dict:
    if request.api == ANTHROPIC:
        return {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _model(request: RecordedRequest) -> str:
    return (
        (request.body or {}).get("model", "unknown")
        if isinstance(request.body, dict)
        else "unknown"
    )


def _openai_message(
    request: RecordedRequest,
    *,
    content: str | None,
    refusal: str | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int] = (100, 20),
) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": _model(request),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": _usage(request, *usage),
        }
    )


def _tool_name(request: RecordedRequest) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    choice = body.get("tool_choice") or {}
    if choice.get("name"):
        return choice["name"]
    tools = body.get("tools") or [{}]
    return tools[0].get("name", "record_drafts")


def _anthropic_message(
    request: RecordedRequest,
    *,
    content: list[dict],
    stop_reason: str,
    usage: tuple[int, int] = (100, 20),
) -> Reply:
    return Reply(
        body={
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": _model(request),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": _usage(request, *usage),
        }
    )


def answer_reply(
    request: RecordedRequest, drafts: list[dict], usage: tuple[int, int] = (100, 20)
) -> Reply:
    """The SDK-native structured answer carrying `drafts`: OpenAI's JSON content,
    Anthropic's forced tool call."""
    if request.api == ANTHROPIC:
        block = {
            "type": "tool_use",
            "id": "toolu_fake",
            "name": _tool_name(request),
            "input": {"drafts": drafts},
        }
        return _anthropic_message(request, content=[block], stop_reason="tool_use", usage=usage)
    return _openai_message(request, content=json.dumps({"drafts": drafts}), usage=usage)


def refusal_reply(
    request: RecordedRequest,
    text: str = REFUSAL_TEXT,
    usage: tuple[int, int] = (100, 20),
    model: str | None = None,
) -> Reply:
    """The model declines: OpenAI's `message.refusal` (content null), or
    Anthropic's `stop_reason: "refusal"` with the words as a text block (no
    block when `text` is empty). `model` is the name the provider reports
    (default: the one asked for)."""
    if request.api == ANTHROPIC:
        content = [{"type": "text", "text": text}] if text else []
        reply = _anthropic_message(request, content=content, stop_reason="refusal", usage=usage)
    else:
        reply = _openai_message(request, content=None, refusal=text, usage=usage)
    if model:
        reply.body["model"] = model
    return reply


def _error_reply(
    request: RecordedRequest, status: int, kind: str, message: str, headers=None
) -> Reply:
    anthropic_types = {
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
        400: "invalid_request_error",
    }
    if request.api == ANTHROPIC:
        body = {
            "type": "error",
            "error": {"type": anthropic_types.get(status, "api_error"), "message": message},
        }
    else:
        body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


class FakeProvider:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._script: deque[Behaviour] = deque()
        self._default: Behaviour = lambda request: answer_reply(request, [])
        self._release = threading.Event()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                request = RecordedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = provider._handle(request)
                if reply.hang:
                    # Hold the connection until the client gives up (or the
                    # server stops); then close without an answer.
                    provider._release.wait(30)
                    self.close_connection = True
                    return
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- life cycle ---------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an IPv4 server's address
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def start(self) -> FakeProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    # -- dispatch -----------------------------------------------------------
    def _handle(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            behaviour = self._script.popleft() if self._script else self._default
        return behaviour(request)

    def _add(self, behaviour: Behaviour, times: int = 1, default: bool = False) -> FakeProvider:
        with self._lock:
            if default:
                self._default = behaviour
            else:
                self._script.extend([behaviour] * times)
        return self

    # -- scripting ----------------------------------------------------------
    def respond(
        self, behaviour: Callable[[RecordedRequest], Reply | list[dict]], **kw
    ) -> FakeProvider:
        """Decide per request: return a Reply, or a list of drafts to answer."""

        def run(request: RecordedRequest) -> Reply:
            result = behaviour(request)
            return result if isinstance(result, Reply) else answer_reply(request, result)

        return self._add(run, **kw)

    def answer(
        self, drafts: list[dict], *, usage: tuple[int, int] = (100, 20), **kw
    ) -> FakeProvider:
        return self._add(lambda request: answer_reply(request, drafts, usage), **kw)

    def refuse(
        self,
        text: str = REFUSAL_TEXT,
        *,
        usage: tuple[int, int] = (100, 20),
        model: str | None = None,
        **kw,
    ) -> FakeProvider:
        return self._add(lambda request: refusal_reply(request, text, usage, model), **kw)

    def error(
        self, status: int, message: str, *, kind: str = "error", headers=None, **kw
    ) -> FakeProvider:
        return self._add(
            lambda request: _error_reply(request, status, kind, message, headers), **kw
        )

    def invalid_key(
        self, message: str = "Incorrect API key provided: sk-...wxyz.", **kw
    ) -> FakeProvider:
        return self.error(401, message, kind="invalid_api_key", **kw)

    def quota(
        self, message: str = "You exceeded your current quota.", *, retry_after: int = 30, **kw
    ) -> FakeProvider:
        return self.error(
            429, message, kind="insufficient_quota", headers={"Retry-After": str(retry_after)}, **kw
        )

    def missing_model(
        self, message: str = "The model `no-such-model` does not exist.", **kw
    ) -> FakeProvider:
        return self.error(404, message, kind="model_not_found", **kw)

    def hang(self, **kw) -> FakeProvider:
        return self._add(lambda request: Reply(hang=True), **kw)

    def malformed(self, **kw) -> FakeProvider:
        def run(request: RecordedRequest) -> Reply:
            if request.api == ANTHROPIC:
                block = {
                    "type": "tool_use",
                    "id": "toolu_fake",
                    "name": _tool_name(request),
                    "input": {"drafts": "n/a"},
                }
                return _anthropic_message(request, content=[block], stop_reason="tool_use")
            return _openai_message(request, content='{"drafts": [{"description": "Send the')

        return self._add(run, **kw)

    def truncated(self, **kw) -> FakeProvider:
        def run(request: RecordedRequest) -> Reply:
            if request.api == ANTHROPIC:
                block = {
                    "type": "tool_use",
                    "id": "toolu_fake",
                    "name": _tool_name(request),
                    "input": {},
                }
                return _anthropic_message(request, content=[block], stop_reason="max_tokens")
            return _openai_message(
                request, content='{"drafts": [{"description": "Send', finish_reason="length"
            )

        return self._add(run, **kw)

    def garbage(self, **kw) -> FakeProvider:
        return self._add(lambda request: Reply(body="<html>Bad gateway</html>"), **kw)

    # -- reading ------------------------------------------------------------
    @property
    def last(self) -> RecordedRequest:
        return self.requests[-1]
