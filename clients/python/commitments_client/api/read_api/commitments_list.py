import datetime
from http import HTTPStatus
from typing import Any, cast

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.commitment_page import CommitmentPage
from ...models.commitments_list_role import CommitmentsListRole
from ...models.commitments_list_status import CommitmentsListStatus
from ...models.error_envelope import ErrorEnvelope
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    cursor: str | Unset = UNSET,
    external_id: str | Unset = UNSET,
    external_system: str | Unset = UNSET,
    limit: int | Unset = 50,
    role: CommitmentsListRole | Unset = UNSET,
    status: CommitmentsListStatus | Unset = UNSET,
    updated_since: datetime.datetime | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["externalId"] = external_id

    params["externalSystem"] = external_system

    params["limit"] = limit

    json_role: str | Unset = UNSET
    if not isinstance(role, Unset):
        json_role = role.value

    params["role"] = json_role

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    json_updated_since: str | Unset = UNSET
    if not isinstance(updated_since, Unset):
        json_updated_since = updated_since.isoformat()
    params["updatedSince"] = json_updated_since

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/commitments",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | CommitmentPage | ErrorEnvelope | None:
    if response.status_code == 200:
        response_200 = CommitmentPage.from_dict(response.json())

        return response_200

    if response.status_code == 304:
        response_304 = cast(Any, None)
        return response_304

    if response.status_code == 400:
        response_400 = ErrorEnvelope.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorEnvelope.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorEnvelope.from_dict(response.json())

        return response_403

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
) -> Response[Any | CommitmentPage | ErrorEnvelope]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    external_id: str | Unset = UNSET,
    external_system: str | Unset = UNSET,
    limit: int | Unset = 50,
    role: CommitmentsListRole | Unset = UNSET,
    status: CommitmentsListStatus | Unset = UNSET,
    updated_since: datetime.datetime | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
) -> Response[Any | CommitmentPage | ErrorEnvelope]:
    """List commitments

     The commitments the token's owner asked (assigner) or was asked (assignee; drafts are their
    assigner's only), newest change (`updatedAt`) first, in pages: `{"results": [...], "next": <URL>}`.
    Follow `next` as given until it is null; it keeps the filters and the `limit`. A commitment that
    changes while you page moves to the front, so a later pass with `updatedSince` finds it.

    Filters, all optional and combined: `role`, `status`, `externalSystem`, `externalId` (both: the
    commitments of one external reference), `updatedSince` (at or after, inclusive). `limit`: 1..100, 50
    by default. Unknown parameters are ignored; a bad value is `400 invalid_payload` with `details`
    naming each parameter.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the page reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the parameters
    (400).

    Args:
        cursor (str | Unset):
        external_id (str | Unset):
        external_system (str | Unset):
        limit (int | Unset):  Default: 50.
        role (CommitmentsListRole | Unset):
        status (CommitmentsListStatus | Unset):
        updated_since (datetime.datetime | Unset):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CommitmentPage | ErrorEnvelope]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        external_id=external_id,
        external_system=external_system,
        limit=limit,
        role=role,
        status=status,
        updated_since=updated_since,
        if_none_match=if_none_match,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    external_id: str | Unset = UNSET,
    external_system: str | Unset = UNSET,
    limit: int | Unset = 50,
    role: CommitmentsListRole | Unset = UNSET,
    status: CommitmentsListStatus | Unset = UNSET,
    updated_since: datetime.datetime | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
) -> Any | CommitmentPage | ErrorEnvelope | None:
    """List commitments

     The commitments the token's owner asked (assigner) or was asked (assignee; drafts are their
    assigner's only), newest change (`updatedAt`) first, in pages: `{"results": [...], "next": <URL>}`.
    Follow `next` as given until it is null; it keeps the filters and the `limit`. A commitment that
    changes while you page moves to the front, so a later pass with `updatedSince` finds it.

    Filters, all optional and combined: `role`, `status`, `externalSystem`, `externalId` (both: the
    commitments of one external reference), `updatedSince` (at or after, inclusive). `limit`: 1..100, 50
    by default. Unknown parameters are ignored; a bad value is `400 invalid_payload` with `details`
    naming each parameter.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the page reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the parameters
    (400).

    Args:
        cursor (str | Unset):
        external_id (str | Unset):
        external_system (str | Unset):
        limit (int | Unset):  Default: 50.
        role (CommitmentsListRole | Unset):
        status (CommitmentsListStatus | Unset):
        updated_since (datetime.datetime | Unset):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CommitmentPage | ErrorEnvelope
    """

    return sync_detailed(
        client=client,
        cursor=cursor,
        external_id=external_id,
        external_system=external_system,
        limit=limit,
        role=role,
        status=status,
        updated_since=updated_since,
        if_none_match=if_none_match,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    external_id: str | Unset = UNSET,
    external_system: str | Unset = UNSET,
    limit: int | Unset = 50,
    role: CommitmentsListRole | Unset = UNSET,
    status: CommitmentsListStatus | Unset = UNSET,
    updated_since: datetime.datetime | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
) -> Response[Any | CommitmentPage | ErrorEnvelope]:
    """List commitments

     The commitments the token's owner asked (assigner) or was asked (assignee; drafts are their
    assigner's only), newest change (`updatedAt`) first, in pages: `{"results": [...], "next": <URL>}`.
    Follow `next` as given until it is null; it keeps the filters and the `limit`. A commitment that
    changes while you page moves to the front, so a later pass with `updatedSince` finds it.

    Filters, all optional and combined: `role`, `status`, `externalSystem`, `externalId` (both: the
    commitments of one external reference), `updatedSince` (at or after, inclusive). `limit`: 1..100, 50
    by default. Unknown parameters are ignored; a bad value is `400 invalid_payload` with `details`
    naming each parameter.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the page reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the parameters
    (400).

    Args:
        cursor (str | Unset):
        external_id (str | Unset):
        external_system (str | Unset):
        limit (int | Unset):  Default: 50.
        role (CommitmentsListRole | Unset):
        status (CommitmentsListStatus | Unset):
        updated_since (datetime.datetime | Unset):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CommitmentPage | ErrorEnvelope]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        external_id=external_id,
        external_system=external_system,
        limit=limit,
        role=role,
        status=status,
        updated_since=updated_since,
        if_none_match=if_none_match,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    external_id: str | Unset = UNSET,
    external_system: str | Unset = UNSET,
    limit: int | Unset = 50,
    role: CommitmentsListRole | Unset = UNSET,
    status: CommitmentsListStatus | Unset = UNSET,
    updated_since: datetime.datetime | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
) -> Any | CommitmentPage | ErrorEnvelope | None:
    """List commitments

     The commitments the token's owner asked (assigner) or was asked (assignee; drafts are their
    assigner's only), newest change (`updatedAt`) first, in pages: `{"results": [...], "next": <URL>}`.
    Follow `next` as given until it is null; it keeps the filters and the `limit`. A commitment that
    changes while you page moves to the front, so a later pass with `updatedSince` finds it.

    Filters, all optional and combined: `role`, `status`, `externalSystem`, `externalId` (both: the
    commitments of one external reference), `updatedSince` (at or after, inclusive). `limit`: 1..100, 50
    by default. Unknown parameters are ignored; a bad value is `400 invalid_payload` with `details`
    naming each parameter.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the page reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the parameters
    (400).

    Args:
        cursor (str | Unset):
        external_id (str | Unset):
        external_system (str | Unset):
        limit (int | Unset):  Default: 50.
        role (CommitmentsListRole | Unset):
        status (CommitmentsListStatus | Unset):
        updated_since (datetime.datetime | Unset):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CommitmentPage | ErrorEnvelope
    """

    return (
        await asyncio_detailed(
            client=client,
            cursor=cursor,
            external_id=external_id,
            external_system=external_system,
            limit=limit,
            role=role,
            status=status,
            updated_since=updated_since,
            if_none_match=if_none_match,
        )
    ).parsed
