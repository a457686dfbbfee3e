"""A search without variants asks the client's own model for some (MCP sampling), where the client declared the
`sampling` capability and the user turned it on (`[search] sampling = true` in oracle.toml, or ORACLE_SAMPLING=1).

The request has a fixed prompt (server/services/capabilities/search/sampled.py) and a hard token budget; the reply is
read as query text only. The transport follows the negotiated protocol, as the SDK's own resolvers do: up to 2025-11-25
the server sends `sampling/createMessage` mid-call and waits at most DEADLINE_S; from 2026-07-28 the call answers
with an `InputRequiredResult` carrying the request, and the client retries the call with the model's reply in
`input_responses` (the client decides how long its model may take). Any failure — a client that refuses, a slow
model, a transport without a back-channel — leaves the search as it was asked, with a warning in its answer.
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
from mcp_types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import is_version_at_least

from oracle_server.services.capabilities.search.sampled import MAX_TOKENS, SYSTEM, prompt, read_reply

DEADLINE_S = 10.0  # up to 2025-11-25: the client's model must answer within this, or the search goes on without
INPUT_KEY = "oracle_variants"  # the one input request's key (2026-07-28 on)
_INPUT_REQUIRED_VERSION = "2026-07-28"


class NeedsInput(Exception):
    """The call must first return this InputRequiredResult (2026-07-28 on); the client retries with the reply."""

    def __init__(self, result: InputRequiredResult) -> None:
        super().__init__("input required")
        self.result = result


def client_can_sample(session: Any) -> bool:
    """Whether the client declared the sampling capability in its handshake."""
    try:
        return session.client_params.capabilities.sampling is not None
    except AttributeError:
        return False


def _params(query: str, languages: list[str]) -> CreateMessageRequestParams:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt(query, languages)))
    return CreateMessageRequestParams(messages=[message], max_tokens=MAX_TOKENS, system_prompt=SYSTEM, temperature=0.0)


def _read(result: Any, query: str) -> tuple[list[str], str | None]:
    try:
        reply = CreateMessageResult.model_validate(result)
    except Exception as exc:  # noqa: BLE001 - an error or a malformed answer from the client
        return [], f"sampling: the client could not write variants ({str(exc)[:200]})"
    text = reply.content.text if isinstance(reply.content, TextContent) else ""
    variants = read_reply(text, query)
    return variants, None if variants else "sampling: the client's model wrote no usable variants"


async def ask_for_variants(context: Any, query: str, languages: list[str]) -> tuple[list[str], str | None]:
    """(variants, warning): the client's model's other phrasings of `query`, or none and why. Raises NeedsInput
    on the first round of a 2026-07-28 call."""
    version = getattr(context, "protocol_version", None)
    if version is not None and is_version_at_least(version, _INPUT_REQUIRED_VERSION):
        answers = getattr(context, "input_responses", None) or {}
        if INPUT_KEY not in answers:
            raise NeedsInput(InputRequiredResult(
                input_requests={INPUT_KEY: CreateMessageRequest(params=_params(query, languages))},
                request_state="oracle:variants"))
        return _read(answers[INPUT_KEY], query)
    params = _params(query, languages)
    try:
        with anyio.fail_after(DEADLINE_S), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks standalone sampling deprecated from 2026-07-28 on
            result = await context.session.create_message(
                messages=params.messages, max_tokens=params.max_tokens, system_prompt=params.system_prompt,
                temperature=params.temperature)
    except TimeoutError:
        return [], f"sampling: the client's model did not answer within {DEADLINE_S:.0f} s; searched without variants"
    except Exception as exc:  # noqa: BLE001 - any refusal or transport failure: search as asked
        return [], f"sampling: the client could not write variants ({type(exc).__name__}: {str(exc)[:200]})"
    return _read(result, query)
