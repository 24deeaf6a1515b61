"""How a text reaches a language model: one class per provider, in one
module, behind a registry keyed by the provider's name (the transports
pattern of `notifications.transports`).

Both providers get the same schema (`gather.schema.DRAFT_LIST_SCHEMA`):
OpenAI as structured outputs in strict mode (Chat Completions, which
OpenAI-compatible gateways also speak), Anthropic as a forced tool call whose
input schema is the same. Refusals, truncation and stop reasons are checked
before the answer is parsed, so a cut-off answer is a clean UpstreamFailure,
never half a list. The answer's drafts are checked once, here
(`gather.drafts.parse_drafts`).

A model that declines (OpenAI's `message.refusal`, Anthropic's
`stop_reason: "refusal"`) is no failure: its Answer has no drafts and the
model's own words in `refusal`, with the model and usage as for any answer (a
refusal still costs tokens). Everything else that is not a usable answer
(truncation, malformed output, HTTP errors, timeouts) is an UpstreamFailure.

The SDKs are imported inside `ask`, where an extraction runs: loading the
URLconf (a web worker's first request) does not pay for them.
"""

from __future__ import annotations

import functools
import json
import ssl
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.conf import settings

from gather.drafts import Draft, Usage, parse_drafts
from gather.schema import DRAFT_LIST_SCHEMA

__all__ = [
    "ANTHROPIC",
    "OPENAI",
    "PROVIDERS",
    "Answer",
    "ModelProvider",
    "UpstreamFailure",
    "provider_for",
    "provider_timeout",
]

OPENAI = "openai"
ANTHROPIC = "anthropic"
TOOL_NAME = "record_commitments"
TOOL_TEXT = "Record the commitments in the text (an empty list if none)."
SCHEMA_NAME = "draft_list"
MAX_OUTPUT_TOKENS = 8192  # within both providers' small models' output limits
REFUSAL_MAX = 2000  # characters of the model's refusal passed on


class UpstreamFailure(Exception):
    """The provider did not give a usable answer. `message` is shown to the
    user (the provider's own words where there are some); it never holds the
    key or the text."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Answer:
    """One provider request's answer: its drafts (as the model gave them,
    shape checked), or none and the model's words when it declined."""

    model: str
    usage: Usage
    drafts: list[Draft] = field(default_factory=list)
    refusal: str | None = None


def provider_timeout() -> float:
    """Seconds one provider request may take (GATHER_PROVIDER_TIMEOUT)."""
    return float(settings.GATHER_PROVIDER_TIMEOUT)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificates the SDKs' HTTP client trusts by default (its own
    default context, the environment's SSL_CERT_FILE / SSL_CERT_DIR included),
    loaded once per process: every client made its own, loading the system's
    certificates again, about 30 ms of CPU a provider call."""
    import httpcore2

    return httpcore2.default_ssl_context()


def _provider_message(exc: Exception) -> str:
    """The provider's own error message, from the error body where there is one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return getattr(exc, "message", None) or str(exc)


class ModelProvider:
    """A provider's API, called with a user's own key. Subclasses say how to
    ask (`ask`); the rest is shared. Its base URL and timeout are read from the
    settings when it is made, in the caller's thread: the chunks' threads that
    start late (or outlive a failed call) ask where the call was meant to go,
    not where the settings point by then."""

    name: ClassVar[str]  # as stored with a model key (gather.models.Provider)
    label: ClassVar[str]  # as people read it, in messages
    base_url_setting: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(self) -> None:
        self._base_url: str = (
            getattr(settings, self.base_url_setting, None) or self.default_base_url
        )
        self.timeout = provider_timeout()

    def ask(self, *, api_key: str, model: str, system: str, user: str) -> Answer:
        raise NotImplementedError

    def base_url(self) -> str:
        # Passed explicitly, so the SDK never reads its own *_BASE_URL variable.
        return self._base_url

    def refusal_words(self, words: str | None) -> str:
        words = (words or "").strip()
        if not words:
            return f"{self.label} declined to answer and gave no reason."
        return words if len(words) <= REFUSAL_MAX else words[: REFUSAL_MAX - 1] + "\u2026"

    def drafts(self, data: object) -> list[Draft]:
        """The answer's drafts, checked once (gather.drafts.parse_drafts)."""
        broken = f"{self.label}'s answer did not follow the draft-list schema"
        listed = data.get("drafts") if isinstance(data, dict) else None
        if not isinstance(listed, list) or not all(isinstance(d, dict) for d in listed):
            raise UpstreamFailure(f"{broken}.")
        try:
            return parse_drafts(data)
        except ValueError as exc:
            raise UpstreamFailure(f"{broken}: {exc}") from None

    def failure(self, exc: Exception, sdk: Any) -> UpstreamFailure:
        """An SDK error as the UpstreamFailure the user reads."""
        if isinstance(exc, sdk.APITimeoutError):
            return UpstreamFailure(f"{self.label} did not answer in time.")
        if isinstance(exc, sdk.APIStatusError):
            return UpstreamFailure(
                f"{self.label}: {_provider_message(exc)}", status=exc.status_code
            )
        if isinstance(exc, sdk.APIConnectionError):
            return UpstreamFailure(f"{self.label} could not be reached.")
        return UpstreamFailure(
            f"{self.label} answered with something unreadable: {type(exc).__name__}."
        )


class OpenAIProvider(ModelProvider):
    name = OPENAI
    label = "OpenAI"
    base_url_setting = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"

    def ask(self, *, api_key: str, model: str, system: str, user: str) -> Answer:
        import openai

        client = openai.OpenAI(
            api_key=api_key,
            base_url=self.base_url(),
            max_retries=0,
            timeout=self.timeout,
            http_client=openai.DefaultHttpxClient(verify=tls_context()),
        )
        # The SDK fills these from OPENAI_ORG_ID / OPENAI_PROJECT_ID / OPENAI_ADMIN_KEY
        # when not given; none of the server's environment may ride on a user's call.
        client.organization = None
        client.project = None
        client.admin_api_key = None
        try:
            completion = client.chat.completions.create(
                model=model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                response_format={
                    "type": "json_schema",
                    "json_schema": {
                        "name": SCHEMA_NAME,
                        "strict": True,
                        "schema": DRAFT_LIST_SCHEMA,
                    },
                },
                max_completion_tokens=MAX_OUTPUT_TOKENS,
            )
        except (openai.OpenAIError, ValueError) as exc:
            raise self.failure(exc, openai) from None
        finally:
            client.close()

        if not getattr(completion, "choices", None):
            raise UpstreamFailure("OpenAI answered with no choices.")
        choice = completion.choices[0]
        message = choice.message
        usage = Usage(
            getattr(completion.usage, "prompt_tokens", 0) or 0,
            getattr(completion.usage, "completion_tokens", 0) or 0,
        )
        answered_by = completion.model or model
        refusal = getattr(message, "refusal", None)
        if refusal:
            return Answer(answered_by, usage, refusal=self.refusal_words(refusal))
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
        return Answer(answered_by, usage, drafts=self.drafts(data))


class AnthropicProvider(ModelProvider):
    name = ANTHROPIC
    label = "Anthropic"
    base_url_setting = "ANTHROPIC_BASE_URL"
    default_base_url = "https://api.anthropic.com"

    def ask(self, *, api_key: str, model: str, system: str, user: str) -> Answer:
        import anthropic

        client = anthropic.Anthropic(
            api_key=api_key,  # explicit: the SDK then reads no credential from the environment
            base_url=self.base_url(),
            max_retries=0,
            timeout=self.timeout,
            http_client=anthropic.DefaultHttpxClient(verify=tls_context()),
        )
        try:
            message = client.messages.create(
                model=model,
                max_tokens=MAX_OUTPUT_TOKENS,
                system=system,
                messages=[{"role": "user", "content": user}],
                tools=[
                    {"name": TOOL_NAME, "description": TOOL_TEXT, "input_schema": DRAFT_LIST_SCHEMA}
                ],
                tool_choice={"type": "tool", "name": TOOL_NAME},
            )
        except (anthropic.AnthropicError, ValueError) as exc:
            raise self.failure(exc, anthropic) from None
        finally:
            client.close()

        usage = Usage(
            getattr(message.usage, "input_tokens", 0) or 0,
            getattr(message.usage, "output_tokens", 0) or 0,
        )
        answered_by = getattr(message, "model", None) or model
        blocks = message.content or []
        stop = getattr(message, "stop_reason", None)
        if stop == "refusal":
            # Only the text blocks are the model's words; a tool call it began
            # before declining is not an answer.
            text = " ".join(
                getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text"
            )
            return Answer(answered_by, usage, refusal=self.refusal_words(text))
        if stop == "max_tokens":
            raise UpstreamFailure(
                "Anthropic's answer was cut off (output token limit); try a shorter text."
            )
        if stop not in ("tool_use", "end_turn", "stop_sequence"):
            raise UpstreamFailure(f"Anthropic stopped unexpectedly ({stop}).")
        calls = [b for b in blocks if b.type == "tool_use" and b.name == TOOL_NAME]
        if not calls:
            raise UpstreamFailure("Anthropic answered without the requested structured output.")
        return Answer(answered_by, usage, drafts=self.drafts(calls[0].input))


PROVIDERS: dict[str, type[ModelProvider]] = {
    provider.name: provider for provider in (OpenAIProvider, AnthropicProvider)
}


def provider_for(name: str) -> ModelProvider:
    """The provider called `name`; UpstreamFailure for one we do not speak."""
    if name not in PROVIDERS:
        raise UpstreamFailure(f"Unknown provider {name!r}.")
    return PROVIDERS[name]()
