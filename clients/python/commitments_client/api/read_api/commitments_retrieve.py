from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.commitment_detail import CommitmentDetail
from ...models.error_envelope import ErrorEnvelope
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: UUID,
    *,
    if_none_match: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/commitments/{id}".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | CommitmentDetail | ErrorEnvelope | None:
    if response.status_code == 200:
        response_200 = CommitmentDetail.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = ErrorEnvelope.from_dict(response.json())

        return response_404

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
) -> Response[Any | CommitmentDetail | ErrorEnvelope]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Response[Any | CommitmentDetail | ErrorEnvelope]:
    """Read one commitment

     One commitment the token's owner asked (assigner) or was asked (assignee), with its `history`: each
    status change, oldest first, from its creation, with when and what kind of actor made it (the facts
    its timeline shows; a renegotiation that leaves the status as it was is not a status change). A
    draft is its assigner's only. Take the `id` from the inbox's answer or from the list.

    Anyone else's commitment, and an unknown or malformed id, is `404 not_found`: the answer does not
    tell them apart.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the commitment reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the id (404).

    Args:
        id (UUID):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CommitmentDetail | ErrorEnvelope]
    """

    kwargs = _get_kwargs(
        id=id,
        if_none_match=if_none_match,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Any | CommitmentDetail | ErrorEnvelope | None:
    """Read one commitment

     One commitment the token's owner asked (assigner) or was asked (assignee), with its `history`: each
    status change, oldest first, from its creation, with when and what kind of actor made it (the facts
    its timeline shows; a renegotiation that leaves the status as it was is not a status change). A
    draft is its assigner's only. Take the `id` from the inbox's answer or from the list.

    Anyone else's commitment, and an unknown or malformed id, is `404 not_found`: the answer does not
    tell them apart.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the commitment reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the id (404).

    Args:
        id (UUID):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CommitmentDetail | ErrorEnvelope
    """

    return sync_detailed(
        id=id,
        client=client,
        if_none_match=if_none_match,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Response[Any | CommitmentDetail | ErrorEnvelope]:
    """Read one commitment

     One commitment the token's owner asked (assigner) or was asked (assignee), with its `history`: each
    status change, oldest first, from its creation, with when and what kind of actor made it (the facts
    its timeline shows; a renegotiation that leaves the status as it was is not a status change). A
    draft is its assigner's only. Take the `id` from the inbox's answer or from the list.

    Anyone else's commitment, and an unknown or malformed id, is `404 not_found`: the answer does not
    tell them apart.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the commitment reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the id (404).

    Args:
        id (UUID):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CommitmentDetail | ErrorEnvelope]
    """

    kwargs = _get_kwargs(
        id=id,
        if_none_match=if_none_match,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
) -> Any | CommitmentDetail | ErrorEnvelope | None:
    """Read one commitment

     One commitment the token's owner asked (assigner) or was asked (assignee), with its `history`: each
    status change, oldest first, from its creation, with when and what kind of actor made it (the facts
    its timeline shows; a renegotiation that leaves the status as it was is not a status change). A
    draft is its assigner's only. Take the `id` from the inbox's answer or from the list.

    Anyone else's commitment, and an unknown or malformed id, is `404 not_found`: the answer does not
    tell them apart.

    The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` with no body while
    the commitment reads the same.

    Checks run in this order, the first failure answering: token (401); the token's client networks and
    its `read` scope (403); the token's rate limit, when the operator set one (429); the id (404).

    Args:
        id (UUID):
        if_none_match (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CommitmentDetail | ErrorEnvelope
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            if_none_match=if_none_match,
        )
    ).parsed
