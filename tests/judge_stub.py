"""A stub of an OpenAI-compatible chat-completions server (vLLM, Ollama, llama.cpp), bound to 127.0.0.1 in a thread,
for the tests of ``score --judge``: it answers as a judge of one format would, by a rule on the judged response, and
can be told to answer 429s, stall, answer garbage, or die after so many answers. It records what it was sent (the
bodies and the Authorization headers) and the most requests it held at once."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

HARMFUL_WORD = "DETONATOR"  # the default rule: a response holding this word is harmful


def judged_response(fmt: str, messages: list[dict[str, str]]) -> str:
    """The response as the judge sees it in the prompt of ``fmt`` (the stub reads the template's slots)."""
    if fmt == "llama-guard":
        return messages[-1]["content"]
    text = messages[0]["content"]
    if fmt == "harmbench":
        return text.split("[GENERATION]:\n", 1)[1].rsplit("\n\n---\nRules:", 1)[0]
    if fmt == "wildguard":
        return text.split("AI assistant:\n", 1)[1].rsplit("\n\n---\n\nAnswers:", 1)[0]
    data = text.split("BEGIN DATA\n", 1)[1].rsplit("\nEND DATA", 1)[0]
    return json.loads(data)["response"]


def verdict_text(fmt: str, harmful: bool) -> str:
    """What a judge of ``fmt`` answers."""
    if fmt == "llama-guard":
        return "unsafe\nS9" if harmful else "safe"
    if fmt == "harmbench":
        return "Yes" if harmful else "No"
    if fmt == "wildguard":
        refusal = "no" if harmful else "yes"
        return f"Harmful request: yes\nResponse refusal: {refusal}\nHarmful response: {'yes' if harmful else 'no'}"
    return json.dumps(
        {"harmful": harmful, "category": "weapons" if harmful else "none", "reason": "as the stub's rule says"}
    )


class StubJudge:
    """``StubJudge(fmt)`` then ``start()``; ``url`` is its /v1 base. ``rule(response) -> harmful`` decides the
    verdict; ``script`` is a list of actions for the next requests, taken in order: ``("status", code, headers)``,
    ``("sleep", seconds)`` (then answer), ``("answer", text)`` (a raw content), ``("body", bytes)`` (a raw reply),
    ``("echo_auth", code)`` (an error whose body echoes the request's Authorization header).
    ``die_after``: after that many answers, the server drops the connection of the next request and stops."""

    def __init__(
        self,
        fmt: str,
        rule: Optional[Callable[[str], bool]] = None,
        delay: float = 0.0,
        die_after: Optional[int] = None,
        answer: Optional[Callable[[str, list[dict[str, str]]], str]] = None,
        port: int = 0,
    ):
        self.fmt, self.delay, self.die_after = fmt, delay, die_after
        self.rule = rule or (lambda text: HARMFUL_WORD in text)
        self.answer = answer
        self.script: list[tuple[Any, ...]] = []
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[Optional[str]] = []
        self.paths: list[str] = []
        self.answered = 0
        self.gets = 0
        self.admitted = 0  # requests taken to be answered (die_after counts these)
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.dead = threading.Event()
        self.port = port
        self.server: Optional[ThreadingHTTPServer] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StubJudge:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                stub.handle(self)

            def do_GET(self):  # what a followed redirect would send: counted, never answered
                with stub.lock:
                    stub.gets += 1
                stub._reply(self, 404, b"{}")

        class Server(ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> StubJudge:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, code: int, body: bytes, headers: Optional[dict] = None) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(body)

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length))
        with self.lock:
            self.bodies.append(body)
            self.auth.append(handler.headers.get("Authorization"))
            self.paths.append(handler.path)
            action = self.script.pop(0) if self.script else None
            dying = self.die_after is not None and self.admitted >= self.die_after
            self.admitted += 0 if dying else 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        left = False

        def reply(*args) -> None:
            # A request stops being in flight before its answer is sent: the client may send its next one as soon
            # as it reads this one, before this thread could count it out.
            nonlocal left
            with self.lock:
                self.in_flight -= 1
            left = True
            self._reply(handler, *args)

        try:
            if dying:  # the server dies: this connection is dropped, and nothing listens any more
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
                if not self.dead.is_set():
                    self.dead.set()
                    threading.Thread(target=self.stop, daemon=True).start()
                return
            time.sleep(self.delay)
            if action and action[0] == "status":
                reply(action[1], b'{"error": "stub"}', action[2] if len(action) > 2 else None)
                return
            if action and action[0] == "echo_auth":  # a server that echoes the request's headers in its error
                echoed = {"error": f"invalid credentials: {handler.headers.get('Authorization')}"}
                reply(action[1], json.dumps(echoed).encode())
                return
            if action and action[0] == "sleep":
                time.sleep(action[1])
            if action and action[0] == "body":
                reply(200, action[1])
                return
            messages = body["messages"]
            if action and action[0] == "answer":
                content = action[1]
            elif self.answer is not None:
                content = self.answer(self.fmt, messages)
            else:
                content = verdict_text(self.fmt, self.rule(judged_response(self.fmt, messages)))
            choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            completion = {"id": "stub", "object": "chat.completion", "model": body.get("model"), "choices": [choice]}
            reply(200, json.dumps(completion).encode())
            with self.lock:
                self.answered += 1
        except OSError:  # the client went away (a timeout): nothing to answer
            pass
        finally:
            with self.lock:
                if not left:
                    self.in_flight -= 1
