"""The connections' transport gathers writes per turn of the event loop (server/http_protocol.py):
what one turn writes leaves as one send, in order, before an end of file or a close."""

from __future__ import annotations

import asyncio
import socket

import pytest

from sparqlrag.server.http_protocol import TurnBuffered


def test_writes_of_one_turn_leave_together_and_before_the_end() -> None:
    async def exchange() -> list[bytes]:
        ours, theirs = socket.socketpair()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        buffered = TurnBuffered(transport, loop)
        buffered.write(b"HTTP/1.1 200 OK\r\n\r\n")
        buffered.write(b"body")
        with pytest.raises(BlockingIOError):  # nothing is sent within the turn
            theirs.recv(100, socket.MSG_DONTWAIT)
        await asyncio.sleep(0)  # the turn ends: one send
        first = await loop.run_in_executor(None, theirs.recv, 100)
        buffered.write(b"last")
        buffered.write_eof()  # what was written goes before the end of file
        rest = await loop.run_in_executor(None, theirs.recv, 100)
        end = await loop.run_in_executor(None, theirs.recv, 100)
        buffered.close()
        theirs.close()
        return [first, rest, end]

    assert asyncio.run(exchange()) == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"last", b""]
