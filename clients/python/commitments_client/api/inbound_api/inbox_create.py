from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.inbox_created import InboxCreated
from ...models.inbox_request import InboxRequest
from ...types import Response


def _get_kwargs(
    *,
    body: InboxRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/inbox",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | InboxCreated | None:
    if response.status_code == 201:
        response_201 = InboxCreated.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = ErrorEnvelope.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorEnvelope.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorEnvelope.from_dict(response.json())

        return response_403

    if response.status_code == 409:
        response_409 = ErrorEnvelope.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorEnvelope.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = ErrorEnvelope.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = ErrorEnvelope.from_dict(response.json())

        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorEnvelope | InboxCreated]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: InboxRequest,
) -> Response[ErrorEnvelope | InboxCreated]:
    """Create a commitment from an external system

     Creates a commitment in `Pending_Handshake` for the assignee to accept, records an audit event
    attributed to the token, and requests the handshake notification, all in one transaction.

    Validation is all-or-nothing: strings are trimmed before their length limits apply; unknown fields
    are ignored. The `deadline` key is required (its value may be null) and must be an absolute ISO-8601
    date and time with `Z` or a UTC offset.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `inbox` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); `assignerEmail` is the token owner (403); `assigneeEmail` is an active user's verified
    address (400, `details.assigneeEmail`, the same answer for an unknown, an unverified and a
    deactivated address); the external reference is new for this assigner (409). Nothing is stored when
    any check fails.

    Args:
        body (InboxRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | InboxCreated]
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
    body: InboxRequest,
) -> ErrorEnvelope | InboxCreated | None:
    """Create a commitment from an external system

     Creates a commitment in `Pending_Handshake` for the assignee to accept, records an audit event
    attributed to the token, and requests the handshake notification, all in one transaction.

    Validation is all-or-nothing: strings are trimmed before their length limits apply; unknown fields
    are ignored. The `deadline` key is required (its value may be null) and must be an absolute ISO-8601
    date and time with `Z` or a UTC offset.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `inbox` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); `assignerEmail` is the token owner (403); `assigneeEmail` is an active user's verified
    address (400, `details.assigneeEmail`, the same answer for an unknown, an unverified and a
    deactivated address); the external reference is new for this assigner (409). Nothing is stored when
    any check fails.

    Args:
        body (InboxRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | InboxCreated
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: InboxRequest,
) -> Response[ErrorEnvelope | InboxCreated]:
    """Create a commitment from an external system

     Creates a commitment in `Pending_Handshake` for the assignee to accept, records an audit event
    attributed to the token, and requests the handshake notification, all in one transaction.

    Validation is all-or-nothing: strings are trimmed before their length limits apply; unknown fields
    are ignored. The `deadline` key is required (its value may be null) and must be an absolute ISO-8601
    date and time with `Z` or a UTC offset.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `inbox` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); `assignerEmail` is the token owner (403); `assigneeEmail` is an active user's verified
    address (400, `details.assigneeEmail`, the same answer for an unknown, an unverified and a
    deactivated address); the external reference is new for this assigner (409). Nothing is stored when
    any check fails.

    Args:
        body (InboxRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | InboxCreated]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: InboxRequest,
) -> ErrorEnvelope | InboxCreated | None:
    """Create a commitment from an external system

     Creates a commitment in `Pending_Handshake` for the assignee to accept, records an audit event
    attributed to the token, and requests the handshake notification, all in one transaction.

    Validation is all-or-nothing: strings are trimmed before their length limits apply; unknown fields
    are ignored. The `deadline` key is required (its value may be null) and must be an absolute ISO-8601
    date and time with `Z` or a UTC offset.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `inbox` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); `assignerEmail` is the token owner (403); `assigneeEmail` is an active user's verified
    address (400, `details.assigneeEmail`, the same answer for an unknown, an unverified and a
    deactivated address); the external reference is new for this assigner (409). Nothing is stored when
    any check fails.

    Args:
        body (InboxRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | InboxCreated
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
