"""Sampling (issue 37, item 4) with a real SDK client that implements it, on the real server object (in-memory
transport): with `[search] sampling` on and a client that declares the capability, a search without variants
asks the client's model for some, uses the reply as query text only, and says so; with sampling off, or a client
without the capability, or a search that brought its own variants, nothing is asked and nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from _corpus import indexed_oracle
from tests.contract.test_variants_surfaces import NOTES, QUESTION, ROLLOUT


def _oracle(tmp_path_factory: pytest.TempPathFactory, sampling: bool) -> Any:
    return indexed_oracle(tmp_path_factory, "sampling", NOTES, sampling=sampling)


@pytest.fixture(scope="module")
def sampling_on(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = _oracle(tmp_path_factory, True)
    yield o
    o.close()


class Model:
    """The client's model: records what it was asked, answers with fixed lines (or fails, or stalls)."""

    def __init__(self, reply: str = "502 bad gateway rollout\n- drain connections load balancer",
                 fail: bool = False) -> None:
        self.reply, self.fail, self.asked = reply, fail, []

    async def __call__(self, context: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        self.asked.append(params)
        if self.fail:
            return ErrorData(code=-1, message="the user declined")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=self.reply),
                                   model="test-model")


ERAS = ("auto", "legacy")  # the 2026-07-28 protocol (input requests) and 2025-11-25 (a request mid-call)


def search(oracle: Any, args: dict, model: Model | None, mode: str = "auto") -> Any:
    from mcp import Client

    from oracle_server.mcp.server import build_server

    async def run() -> Any:
        async with Client(build_server(oracle), sampling_callback=model, mode=mode) as client:  # type: ignore[arg-type]
            return await client.call_tool("oracle_search", args)

    return anyio.run(run)


@pytest.mark.parametrize("mode", ERAS)
def test_a_search_without_variants_asks_the_clients_model_and_uses_the_reply_as_query_text(sampling_on: Any,
                                                                                           mode: str) -> None:
    model = Model()
    result = search(sampling_on, {"query": QUESTION, "mode": "fts", "limit": 3}, model, mode)
    assert not result.is_error
    data = result.structured_content
    assert len(model.asked) == 1
    asked = model.asked[0]
    assert asked.max_tokens == 200 and QUESTION in asked.messages[0].content.text
    assert "never instructions" in asked.system_prompt
    assert data["meta"]["sampled_variants"] == ["502 bad gateway rollout", "drain connections load balancer"]
    assert data["hits"][0]["source_file"] == ROLLOUT and data["hits"][0]["phrasings"] == [1, 2]


@pytest.mark.parametrize("mode", ERAS)
def test_a_search_with_its_own_variants_is_never_sampled(sampling_on: Any, mode: str) -> None:
    model = Model()
    own = search(sampling_on, {"query": QUESTION, "mode": "fts", "variants": ["cache warming"]}, model, mode)
    assert not own.is_error and model.asked == [] and own.structured_content["meta"]["sampled_variants"] is None


def test_a_model_that_refuses_leaves_the_search_as_asked(sampling_on: Any) -> None:
    """Up to 2025-11-25 the server hears the refusal and searches without variants. (From 2026-07-28 a client
    whose model refuses an input request ends the call itself: the SDK client raises; nothing to search.)"""
    refused = search(sampling_on, {"query": QUESTION, "mode": "fts"}, Model(fail=True), "legacy")
    data = refused.structured_content
    assert not refused.is_error and data["meta"]["sampled_variants"] is None and data["meta"]["phrasings"] is None
    assert any(w.startswith("sampling: the client could not write variants") for w in data["meta"]["warnings"])


@pytest.mark.parametrize("mode", ERAS)
def test_a_client_without_the_capability_is_never_asked(sampling_on: Any, mode: str) -> None:
    plain = search(sampling_on, {"query": QUESTION, "mode": "fts"}, None, mode)
    assert not plain.is_error
    meta = plain.structured_content["meta"]
    assert meta["sampled_variants"] is None and not any("sampling" in w for w in meta["warnings"])


def test_sampling_is_off_by_default(tmp_path_factory: pytest.TempPathFactory) -> None:
    o = _oracle(tmp_path_factory, False)
    try:
        model = Model()
        result = search(o, {"query": QUESTION, "mode": "fts"}, model)
        assert not result.is_error and model.asked == [] and result.structured_content["meta"]["phrasings"] is None
    finally:
        o.close()
