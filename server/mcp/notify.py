"""Change notifications: tell MCP clients when notes are indexed, changed or removed.

Two halves:

- `ChangeFeed` (server/services/support/changes.py: no MCP there) keeps a snapshot of what the index holds (each note's
  sha256 and each section's content hash) and, on `check()`, diffs the index against it. It is asked after every batch
  the file watcher indexes (a hook in `oracle_indexer.worker.watch`), so a saved file is announced as soon as it is
  searchable, and polled once a second as a safety net for what no watcher of this process saw (a
  learning written with `--no-watch`, another process's indexer). A poll costs one small query while
  nothing changed.
- `McpNotifier` turns a diff into MCP notifications on the server's event loop, for both protocol eras
  the SDK serves: 2026-07-28 clients listen on `subscriptions/listen` streams (events go through the
  SDK's subscription bus, which filters them per stream); handshake-era clients use `resources/subscribe`
  and get `notifications/resources/updated` on their connection, and `list_changed` once they have
  listed resources.

What is announced: `resources/updated` for every added, changed or removed note (`oracle://note/...`), for
every section whose content hash changed or that vanished (`oracle://chunk/...`), and for `oracle://stats`;
`resources/list_changed` when notes were added or removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated

from oracle_server.mcp.resources import STATS_URI, chunk_uri, note_uri
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.support.changes import ChangeFeed, Changes

log = logging.getLogger("oracle.notify")
POLL_SECONDS = 1.0


def uris_of(changes: Changes) -> list[str]:
    """The resources a diff touches: every note, every section, and the stats."""
    return [*(note_uri(p) for p in changes.notes), *(chunk_uri(c) for c in sorted(changes.chunks)), STATS_URI]


class McpNotifier:
    """Delivers a `ChangeFeed`'s diffs to MCP clients of one server, from its own event loop."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self.feed = ChangeFeed(oracle)
        self.bus = InMemorySubscriptionBus()  # passed to the MCPServer: serves subscriptions/listen
        self._legacy: dict[int, tuple[Any, set[str]]] = {}  # connection key -> (session, subscribed URIs)
        self._listers: dict[int, Any] = {}  # connection key -> session, for list_changed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._send: Any = None  # the loop's end of the queue of diffs, while the server runs

    # -- handshake-era sessions -------------------------------------------------------------------
    @staticmethod
    def _key(session: Any) -> int:
        """One key per client connection (a ServerSession is built per request; its connection is not)."""
        return id(getattr(session, "_connection", session))

    def subscribe(self, session: Any, uri: str) -> None:
        entry = self._legacy.setdefault(self._key(session), (session, set()))
        entry[1].add(uri)
        self._listers.setdefault(self._key(session), session)

    def unsubscribe(self, session: Any, uri: str) -> None:
        entry = self._legacy.get(self._key(session))
        if entry:
            entry[1].discard(uri)

    def listed(self, session: Any) -> None:
        """The session listed resources: it will be told when the list changes."""
        self._listers.setdefault(self._key(session), session)

    # -- the event loop side ----------------------------------------------------------------------
    def _post(self, changes: Changes) -> None:
        """From any thread: hand a diff to the loop (dropped when the server is not running)."""
        loop, send = self._loop, self._send
        if loop is None or send is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._enqueue, send, changes)

    @staticmethod
    def _enqueue(send: Any, changes: Changes) -> None:
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            send.send_nowait(changes)

    async def _deliver(self, changes: Changes) -> None:
        uris = uris_of(changes)
        for uri in uris:
            await self.bus.publish(ResourceUpdated(uri=uri))
        if changes.list_changed:
            await self.bus.publish(ResourcesListChanged())
        for key, (session, wanted) in list(self._legacy.items()):
            for uri in [u for u in uris if u in wanted]:
                if not await self._send_to(key, session.send_resource_updated(uri)):
                    break
        if changes.list_changed:
            for key, session in list(self._listers.items()):
                await self._send_to(key, session.send_resource_list_changed())

    async def _send_to(self, key: int, sending: Any) -> bool:
        """Send one notification; a connection that is gone is forgotten."""
        try:
            with anyio.fail_after(5):
                await sending
            return True
        except Exception as exc:
            log.info("dropping a closed MCP connection's subscriptions: %s", exc)
            self._legacy.pop(key, None)
            self._listers.pop(key, None)
            return False

    async def _poll(self) -> None:
        while True:
            await anyio.sleep(POLL_SECONDS)
            try:
                if await anyio.to_thread.run_sync(self.feed.changed_since_last):
                    await anyio.to_thread.run_sync(self.feed.check)
            except Exception:  # a busy or rebuilt database: try again next time
                log.debug("change poll failed", exc_info=True)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the MCP server runs: prime the snapshot, follow the watcher and the poll, deliver."""
        from oracle_indexer.worker.watch import add_batch_listener
        from oracle_server.services.capabilities.indexing import serves_indexer

        send, receive = anyio.create_memory_object_stream[Changes](256)
        self._loop, self._send = asyncio.get_running_loop(), send
        await anyio.to_thread.run_sync(self.feed.prime)
        stop_feed = self.feed.subscribe(self._post)

        def after_batch(indexer: Any, _report: Any) -> None:
            if serves_indexer(self.oracle, indexer):
                self.feed.check()

        stop_watch = add_batch_listener(after_batch)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._poll)

                async def pump() -> None:
                    async with receive:
                        async for changes in receive:
                            try:
                                await self._deliver(changes)
                            except Exception:
                                log.exception("delivering change notifications failed")

                tg.start_soon(pump)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            stop_watch()
            stop_feed()
            self._loop = self._send = None
            send.close()
