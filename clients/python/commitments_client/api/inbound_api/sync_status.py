from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.sync_request import SyncRequest
from ...models.sync_result import SyncResult
from ...types import Response


def _get_kwargs(
    *,
    body: SyncRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/sync",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | SyncResult | None:
    if response.status_code == 200:
        response_200 = SyncResult.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = ErrorEnvelope.from_dict(response.json())

        return response_404

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

    if response.status_code == 503:
        response_503 = ErrorEnvelope.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorEnvelope | SyncResult]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> Response[ErrorEnvelope | SyncResult]:
    """Drive a status change from an external system

     Moves the commitment with this external reference, among those whose assigner is the token owner, to
    `status` (only `Completed` today: `Active` to `Completed`, through the same transition as the user
    interface, with an audit event attributed to the token).

    Replaying into the status the commitment already has answers `200` with `changed: false` and writes
    nothing. A reference that is unknown, or belongs to another assigner, is `404 not_found`; a
    commitment that cannot move to the requested status (for example still `Pending_Handshake`) is `409
    invalid_transition` with `details.currentStatus`.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `sync` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); the reference (404); the move (409).

    Args:
        body (SyncRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | SyncResult]
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
    body: SyncRequest,
) -> ErrorEnvelope | SyncResult | None:
    """Drive a status change from an external system

     Moves the commitment with this external reference, among those whose assigner is the token owner, to
    `status` (only `Completed` today: `Active` to `Completed`, through the same transition as the user
    interface, with an audit event attributed to the token).

    Replaying into the status the commitment already has answers `200` with `changed: false` and writes
    nothing. A reference that is unknown, or belongs to another assigner, is `404 not_found`; a
    commitment that cannot move to the requested status (for example still `Pending_Handshake`) is `409
    invalid_transition` with `details.currentStatus`.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `sync` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); the reference (404); the move (409).

    Args:
        body (SyncRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | SyncResult
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> Response[ErrorEnvelope | SyncResult]:
    """Drive a status change from an external system

     Moves the commitment with this external reference, among those whose assigner is the token owner, to
    `status` (only `Completed` today: `Active` to `Completed`, through the same transition as the user
    interface, with an audit event attributed to the token).

    Replaying into the status the commitment already has answers `200` with `changed: false` and writes
    nothing. A reference that is unknown, or belongs to another assigner, is `404 not_found`; a
    commitment that cannot move to the requested status (for example still `Pending_Handshake`) is `409
    invalid_transition` with `details.currentStatus`.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `sync` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); the reference (404); the move (409).

    Args:
        body (SyncRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | SyncResult]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> ErrorEnvelope | SyncResult | None:
    """Drive a status change from an external system

     Moves the commitment with this external reference, among those whose assigner is the token owner, to
    `status` (only `Completed` today: `Active` to `Completed`, through the same transition as the user
    interface, with an audit event attributed to the token).

    Replaying into the status the commitment already has answers `200` with `changed: false` and writes
    nothing. A reference that is unknown, or belongs to another assigner, is `404 not_found`; a
    commitment that cannot move to the requested status (for example still `Pending_Handshake`) is `409
    invalid_transition` with `details.currentStatus`.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `sync` scope (403); the token's rate limit, when the operator set one (429); body and fields
    (400); the reference (404); the move (409).

    Args:
        body (SyncRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | SyncResult
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
