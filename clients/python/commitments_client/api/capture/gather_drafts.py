from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.gather_request import GatherRequest
from ...models.gather_result import GatherResult
from ...types import Response


def _get_kwargs(
    *,
    body: GatherRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/gather",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | GatherResult | None:
    if response.status_code == 200:
        response_200 = GatherResult.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorEnvelope.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorEnvelope.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorEnvelope.from_dict(response.json())

        return response_403

    if response.status_code == 413:
        response_413 = ErrorEnvelope.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = ErrorEnvelope.from_dict(response.json())

        return response_429

    if response.status_code == 502:
        response_502 = ErrorEnvelope.from_dict(response.json())

        return response_502

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorEnvelope | GatherResult]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: GatherRequest,
) -> Response[ErrorEnvelope | GatherResult]:
    """Draft commitments from pasted text (your own model key)

     Reads pasted text (meeting notes, a chat log, an e-mail thread) with **your own** model provider key
    (OpenAI or Anthropic, stored on Settings, Model keys) and answers draft commitments, each with a
    confidence level and the passage it comes from. Nothing is stored: saving drafts is a separate step
    of the capture page (`/capture/`).

    **Each call costs a real upstream call** to your provider, billed to your key, including every call
    made with *Try it out* on this page. (The inbox and sync operations have no such cost.)

    Authentication: the session cookie of a signed-in user, with the CSRF token in the `X-CSRFToken`
    header (this page's try-it client sends it for you when you are signed in). Bearer tokens are
    refused: there is no programmatic path; programmatic clients use `POST /api/v1/inbox`.

    Checks run in this order, the first failure answering: plain HTTP off loopback in production (403
    `https_required`); body over 1 MiB (413); a bearer token, or no signed-in session (401); no valid
    CSRF token (403 `forbidden`); the body (400 `invalid_payload`: not a JSON object, or `text` missing,
    not a string, blank or over 100,000 characters after trimming, in `details.text`); no stored
    provider key (400 `no_byok_key`); the per-user rate limit (429, a token bucket of
    `GATHER_RATE_BURST` calls refilled at `GATHER_RATE_PER_HOUR` an hour, with `Retry-After`); the
    provider (502 `upstream_failure`: an invalid key, exhausted quota, a missing model, malformed or
    truncated output, a timeout; the provider's message is passed through as an opaque string). A call
    refused before the rate limit spends none of it.

    A model that **declines** to read the text is not a failure: the answer is `200` with `drafts: []`,
    the model and the usage as the provider reported them (a refusal still costs tokens), and the
    model's own words in `refusal` (null in every other answer). A long text is read in parts; a part
    the model declines gives no drafts, the other parts' drafts are kept, and `refusal` names the parts
    declined.

    Deadlines are resolved against the current time in your time zone; e-mail addresses are filled only
    for your collaborators, where the name matches one of them unambiguously, or where the text writes a
    collaborator's address next to the name ("Sam (sam@example.com)"); an address that is no
    collaborator's is never used. A model that finds nothing to extract answers `drafts: []`.

    Args:
        body (GatherRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GatherResult]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: GatherRequest,
) -> ErrorEnvelope | GatherResult | None:
    """Draft commitments from pasted text (your own model key)

     Reads pasted text (meeting notes, a chat log, an e-mail thread) with **your own** model provider key
    (OpenAI or Anthropic, stored on Settings, Model keys) and answers draft commitments, each with a
    confidence level and the passage it comes from. Nothing is stored: saving drafts is a separate step
    of the capture page (`/capture/`).

    **Each call costs a real upstream call** to your provider, billed to your key, including every call
    made with *Try it out* on this page. (The inbox and sync operations have no such cost.)

    Authentication: the session cookie of a signed-in user, with the CSRF token in the `X-CSRFToken`
    header (this page's try-it client sends it for you when you are signed in). Bearer tokens are
    refused: there is no programmatic path; programmatic clients use `POST /api/v1/inbox`.

    Checks run in this order, the first failure answering: plain HTTP off loopback in production (403
    `https_required`); body over 1 MiB (413); a bearer token, or no signed-in session (401); no valid
    CSRF token (403 `forbidden`); the body (400 `invalid_payload`: not a JSON object, or `text` missing,
    not a string, blank or over 100,000 characters after trimming, in `details.text`); no stored
    provider key (400 `no_byok_key`); the per-user rate limit (429, a token bucket of
    `GATHER_RATE_BURST` calls refilled at `GATHER_RATE_PER_HOUR` an hour, with `Retry-After`); the
    provider (502 `upstream_failure`: an invalid key, exhausted quota, a missing model, malformed or
    truncated output, a timeout; the provider's message is passed through as an opaque string). A call
    refused before the rate limit spends none of it.

    A model that **declines** to read the text is not a failure: the answer is `200` with `drafts: []`,
    the model and the usage as the provider reported them (a refusal still costs tokens), and the
    model's own words in `refusal` (null in every other answer). A long text is read in parts; a part
    the model declines gives no drafts, the other parts' drafts are kept, and `refusal` names the parts
    declined.

    Deadlines are resolved against the current time in your time zone; e-mail addresses are filled only
    for your collaborators, where the name matches one of them unambiguously, or where the text writes a
    collaborator's address next to the name ("Sam (sam@example.com)"); an address that is no
    collaborator's is never used. A model that finds nothing to extract answers `drafts: []`.

    Args:
        body (GatherRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GatherResult
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: GatherRequest,
) -> Response[ErrorEnvelope | GatherResult]:
    """Draft commitments from pasted text (your own model key)

     Reads pasted text (meeting notes, a chat log, an e-mail thread) with **your own** model provider key
    (OpenAI or Anthropic, stored on Settings, Model keys) and answers draft commitments, each with a
    confidence level and the passage it comes from. Nothing is stored: saving drafts is a separate step
    of the capture page (`/capture/`).

    **Each call costs a real upstream call** to your provider, billed to your key, including every call
    made with *Try it out* on this page. (The inbox and sync operations have no such cost.)

    Authentication: the session cookie of a signed-in user, with the CSRF token in the `X-CSRFToken`
    header (this page's try-it client sends it for you when you are signed in). Bearer tokens are
    refused: there is no programmatic path; programmatic clients use `POST /api/v1/inbox`.

    Checks run in this order, the first failure answering: plain HTTP off loopback in production (403
    `https_required`); body over 1 MiB (413); a bearer token, or no signed-in session (401); no valid
    CSRF token (403 `forbidden`); the body (400 `invalid_payload`: not a JSON object, or `text` missing,
    not a string, blank or over 100,000 characters after trimming, in `details.text`); no stored
    provider key (400 `no_byok_key`); the per-user rate limit (429, a token bucket of
    `GATHER_RATE_BURST` calls refilled at `GATHER_RATE_PER_HOUR` an hour, with `Retry-After`); the
    provider (502 `upstream_failure`: an invalid key, exhausted quota, a missing model, malformed or
    truncated output, a timeout; the provider's message is passed through as an opaque string). A call
    refused before the rate limit spends none of it.

    A model that **declines** to read the text is not a failure: the answer is `200` with `drafts: []`,
    the model and the usage as the provider reported them (a refusal still costs tokens), and the
    model's own words in `refusal` (null in every other answer). A long text is read in parts; a part
    the model declines gives no drafts, the other parts' drafts are kept, and `refusal` names the parts
    declined.

    Deadlines are resolved against the current time in your time zone; e-mail addresses are filled only
    for your collaborators, where the name matches one of them unambiguously, or where the text writes a
    collaborator's address next to the name ("Sam (sam@example.com)"); an address that is no
    collaborator's is never used. A model that finds nothing to extract answers `drafts: []`.

    Args:
        body (GatherRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GatherResult]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: GatherRequest,
) -> ErrorEnvelope | GatherResult | None:
    """Draft commitments from pasted text (your own model key)

     Reads pasted text (meeting notes, a chat log, an e-mail thread) with **your own** model provider key
    (OpenAI or Anthropic, stored on Settings, Model keys) and answers draft commitments, each with a
    confidence level and the passage it comes from. Nothing is stored: saving drafts is a separate step
    of the capture page (`/capture/`).

    **Each call costs a real upstream call** to your provider, billed to your key, including every call
    made with *Try it out* on this page. (The inbox and sync operations have no such cost.)

    Authentication: the session cookie of a signed-in user, with the CSRF token in the `X-CSRFToken`
    header (this page's try-it client sends it for you when you are signed in). Bearer tokens are
    refused: there is no programmatic path; programmatic clients use `POST /api/v1/inbox`.

    Checks run in this order, the first failure answering: plain HTTP off loopback in production (403
    `https_required`); body over 1 MiB (413); a bearer token, or no signed-in session (401); no valid
    CSRF token (403 `forbidden`); the body (400 `invalid_payload`: not a JSON object, or `text` missing,
    not a string, blank or over 100,000 characters after trimming, in `details.text`); no stored
    provider key (400 `no_byok_key`); the per-user rate limit (429, a token bucket of
    `GATHER_RATE_BURST` calls refilled at `GATHER_RATE_PER_HOUR` an hour, with `Retry-After`); the
    provider (502 `upstream_failure`: an invalid key, exhausted quota, a missing model, malformed or
    truncated output, a timeout; the provider's message is passed through as an opaque string). A call
    refused before the rate limit spends none of it.

    A model that **declines** to read the text is not a failure: the answer is `200` with `drafts: []`,
    the model and the usage as the provider reported them (a refusal still costs tokens), and the
    model's own words in `refusal` (null in every other answer). A long text is read in parts; a part
    the model declines gives no drafts, the other parts' drafts are kept, and `refusal` names the parts
    declined.

    Deadlines are resolved against the current time in your time zone; e-mail addresses are filled only
    for your collaborators, where the name matches one of them unambiguously, or where the text writes a
    collaborator's address next to the name ("Sam (sam@example.com)"); an address that is no
    collaborator's is never used. A model that finds nothing to extract answers `drafts: []`.

    Args:
        body (GatherRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GatherResult
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
