"""Model judges on an OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp server, a hosted API):
``score --judge URL --judge-model NAME --judge-format FORMAT`` (docs/model-judges.md).

Standard library only: ``urllib.request`` for the calls, ``concurrent.futures`` for at most ``concurrency`` calls
at a time, ``judge_cache`` (SQLite) for the answers. Each call has a timeout and is retried with exponential
backoff and full jitter on 429, on 5xx, on a timeout and on a connection error, honouring ``Retry-After``. The API
key is read from an environment variable by the caller and sent as a bearer header; it is never part of a message,
a verdict, a record or the cache (every error text is scrubbed of it). Redirects are not followed (a bearer header
is never sent to another host).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Optional

from reporting._version import __version__
from reporting.scoring.judge_cache import JudgeCache, cache_key
from reporting.scoring.judge_formats import MAX_TOKENS, build_messages, parse_answer

MAX_ANSWER_BYTES = 1 << 20  # a chat completion for a verdict is a few hundred bytes
MAX_RETRY_AFTER = 60.0  # seconds: a longer Retry-After is waited this long
BACKOFF_CAP = 30.0
FATAL_STATUS = (401, 403, 404)  # wrong key, no access, wrong path or model: every call would fail the same way


class EndpointError(ValueError):
    """The endpoint cannot be used as given (its message never holds the URL's credentials, query or path)."""


def parse_endpoint(url: str) -> tuple[str, str]:
    """(the chat-completions URL to POST to, the endpoint as recorded: scheme://host[:port]). ``url`` is the base
    (``http://127.0.0.1:8000/v1``) or the full ``.../chat/completions``; only http and https are accepted."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise EndpointError("--judge: not a URL (expected http(s)://HOST[:PORT]/v1)") from None
    if parts.scheme not in ("http", "https"):
        raise EndpointError(
            "--judge: only http:// and https:// endpoints are accepted"
            + (f" (got a {parts.scheme}: URL)" if parts.scheme.isalnum() else "")
        )
    if not parts.hostname:
        raise EndpointError("--judge: the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise EndpointError(
            "--judge: credentials in the URL are refused; put the API key in the environment variable named by "
            "--judge-key-env"
        )
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")), shown


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # a redirect ends as an HTTP error
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


@dataclass(frozen=True)
class Endpoint:
    url: str  # the chat-completions URL (never recorded nor printed)
    shown: str  # scheme://host[:port]: what is recorded and printed
    model: str
    fmt: str
    key: Optional[str] = field(default=None, repr=False)
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 0.5  # seconds, doubled per retry, full jitter

    def scrub(self, text: str) -> str:
        return text.replace(self.key, "[key]") if self.key else text


@dataclass
class CallResult:
    answer: Optional[str] = None
    error: Optional[str] = None
    latency_ms: Optional[float] = None
    retries: int = 0
    attempts: int = 0  # requests sent
    fatal: bool = False  # every further call would fail the same way (401, 403, 404, the host is unreachable)
    stopped: bool = False  # not asked again: another case's call found the endpoint failing for good


def retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from a Retry-After header (delay-seconds or an HTTP date), capped; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    wait = when.timestamp() - (time.time() if now is None else now)
    return min(max(wait, 0.0), MAX_RETRY_AFTER)


def backoff_delay(endpoint: Endpoint, attempt: int, rng: random.Random) -> float:
    """Full jitter: uniform between 0 and min(cap, backoff x 2^attempt)."""
    return rng.uniform(0.0, min(BACKOFF_CAP, endpoint.backoff * (2**attempt)))


def _request(endpoint: Endpoint, messages: list[dict[str, str]]) -> urllib.request.Request:
    body = {
        "model": endpoint.model,
        "messages": messages,
        "temperature": 0,
        "max_tokens": MAX_TOKENS[endpoint.fmt],
        "stream": False,
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"runlens/{__version__}",
    }
    if endpoint.key:
        headers["Authorization"] = f"Bearer {endpoint.key}"
    return urllib.request.Request(endpoint.url, data=json.dumps(body).encode(), headers=headers, method="POST")


def _content(raw: bytes) -> str:
    """The first choice's message content of a chat completion; ValueError naming what is missing."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("the endpoint's reply is not JSON") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("the endpoint's reply has no choices")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise ValueError("the endpoint's reply has no message content")
    return content


def call(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    sleep: Callable[[float], None] = time.sleep,
    rng: Optional[random.Random] = None,
    stop: Optional[threading.Event] = None,
) -> CallResult:
    """One chat completion, retried; the answer text, or an error (never raised)."""
    rng = rng or random.Random()
    retries = 0
    for attempt in range(endpoint.retries + 1):
        if stop is not None and stop.is_set():
            return CallResult(
                error="not asked: the endpoint failed for an earlier case",
                retries=retries,
                attempts=attempt,
                stopped=True,
            )
        wait: Optional[float] = None
        started = time.perf_counter()
        sent = attempt + 1
        try:
            with _OPENER.open(_request(endpoint, messages), timeout=endpoint.timeout) as reply:
                raw = reply.read(MAX_ANSWER_BYTES + 1)
            if len(raw) > MAX_ANSWER_BYTES:
                return CallResult(error="the endpoint's reply is larger than 1 MB", retries=retries, attempts=sent)
            try:
                content = _content(raw)
            except ValueError as exc:
                return CallResult(error=str(exc), retries=retries, attempts=sent)
            latency = (time.perf_counter() - started) * 1000
            return CallResult(answer=content, latency_ms=latency, retries=retries, attempts=sent)
        except urllib.error.HTTPError as exc:
            status = exc.code
            detail = f"HTTP {status} from {endpoint.shown}"
            try:
                snippet = exc.read(300).decode("utf-8", "replace").strip()
            except (OSError, http.client.HTTPException):
                snippet = ""
            if snippet:
                detail += ": " + " ".join(snippet.split())[:200]
            exc.close()
            if status != 429 and status < 500:
                if status in FATAL_STATUS and stop is not None:
                    stop.set()  # set here, not by the collector: the other workers see it before their next call
                fatal = status in FATAL_STATUS
                return CallResult(error=endpoint.scrub(detail), retries=retries, attempts=sent, fatal=fatal)
            wait = retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            unreachable = False
        except urllib.error.URLError as exc:
            reason = exc.reason
            timed_out = isinstance(reason, (TimeoutError, socket.timeout))
            detail = f"{'timed out' if timed_out else 'cannot connect'}: {endpoint.shown} ({reason})"
            unreachable = isinstance(reason, (ConnectionRefusedError, ConnectionResetError, socket.gaierror))
        except TimeoutError:
            detail, unreachable = f"timed out after {endpoint.timeout:g} s: {endpoint.shown}", False
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            detail = f"connection to {endpoint.shown} failed ({type(exc).__name__})"
            unreachable = isinstance(exc, (ConnectionResetError, ConnectionAbortedError))  # dropped, every attempt
        if attempt == endpoint.retries:
            if unreachable and stop is not None:
                stop.set()
            error = endpoint.scrub(f"{detail}; gave up after {sent} attempt(s)")
            return CallResult(error=error, retries=retries, attempts=sent, fatal=unreachable)
        retries += 1
        delay = backoff_delay(endpoint, attempt, rng)
        try:
            sleep(delay if wait is None else max(wait, delay))
        except BaseException:  # Ctrl+C while waiting: the other workers must not start a call before it is seen
            if stop is not None:
                stop.set()
            raise
    raise AssertionError("not reached")  # pragma: no cover


@dataclass
class JudgeStats:
    cases: int = 0  # cases with a response to judge
    judged: int = 0
    errors: int = 0  # cases not judged: failed (no answer from the endpoint) + unreadable (an answer, not a verdict)
    failed: int = 0
    unreadable: int = 0
    calls: int = 0  # requests sent to the endpoint (retries included)
    answered: int = 0  # of which answered (the latencies are theirs)
    cache_hits: int = 0
    retries: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    first_failure: Optional[str] = None  # the first endpoint error, for the message (not recorded)

    def percentile(self, q: float) -> Optional[float]:
        """Nearest-rank percentile of the calls' latencies, in ms (None without calls)."""
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        rank = max(1, -(-len(ordered) * q // 100))
        return round(ordered[int(rank) - 1], 1)

    def record(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "judged": self.judged,
            "errors": self.errors,
            "failed": self.failed,
            "unreadable": self.unreadable,
            "calls": self.calls,
            "answered": self.answered,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "latency_ms_p50": self.percentile(50),
            "latency_ms_p95": self.percentile(95),
            "seconds": round(self.seconds, 3),
        }


def verdict_of(fmt: str, answer: str) -> dict[str, Any]:
    """The verdict recorded for one answer: passed (the response is not harmful), score (1 harmful, 0 not), the
    explanation, the category where the format gives one; or passed null with the error when it does not parse."""
    parsed = parse_answer(fmt, answer)
    if parsed.harmful is None:
        return {"passed": None, "explanation": f"not judged: {parsed.error}", "error": parsed.error}
    verdict: dict[str, Any] = {
        "passed": not parsed.harmful,
        "score": 1.0 if parsed.harmful else 0.0,
        "explanation": parsed.reason or "",
    }
    if parsed.category:
        verdict["category"] = parsed.category
    verdict.update(parsed.extra)
    return verdict


Item = Optional[tuple[str, str, Optional[str]]]  # (request, response, behaviour), None: nothing to judge


def judge_items(
    endpoint: Endpoint,
    items: Sequence[Item],
    cache: JudgeCache,
    concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[Optional[dict[str, Any]]], JudgeStats]:
    """Each item's verdict (None where the item is None), and the figures of the calls. Cached answers are used
    first; the rest are asked at most ``concurrency`` at a time, identical prompts once, and each answer that
    parses is committed to the cache as it arrives."""
    started = time.perf_counter()
    stats = JudgeStats()
    verdicts: list[Optional[dict[str, Any]]] = [None] * len(items)
    pending: dict[str, tuple[list[dict[str, str]], list[int]]] = {}
    for index, item in enumerate(items):
        if item is None:
            continue
        stats.cases += 1
        messages = build_messages(endpoint.fmt, item[0], item[1], item[2])
        key = cache_key(endpoint.model, endpoint.fmt, messages)
        answer = cache.get(key)
        if answer is not None:
            stats.cache_hits += 1
            verdicts[index] = verdict_of(endpoint.fmt, answer)
        else:
            pending.setdefault(key, (messages, []))[1].append(index)
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="runlens-judge")
    try:
        futures = {
            pool.submit(call, endpoint, messages, sleep, random.Random(), stop): key
            for key, (messages, _) in pending.items()
        }
        for future in as_completed(futures):
            key = futures[future]
            result = future.result()
            stats.retries += result.retries
            stats.calls += result.attempts
            if result.fatal:
                stop.set()  # the cases not yet asked are not asked: a rerun asks them
            if result.answer is not None:
                stats.answered += 1
                stats.latencies_ms.append(result.latency_ms or 0.0)
                verdict = verdict_of(endpoint.fmt, result.answer)
                if verdict["passed"] is not None:
                    cache.put(key, endpoint.model, endpoint.fmt, result.answer, result.latency_ms or 0.0)
            else:
                error = result.error or "no answer"
                verdict = {"passed": None, "explanation": f"not judged: {error}", "error": error}
                stats.failed += len(pending[key][1])
                if result.attempts and not result.stopped and not stats.first_failure:  # the endpoint's own error
                    stats.first_failure = error
            for index in pending[key][1]:
                verdicts[index] = dict(verdict)
    except BaseException:  # Ctrl+C, a cache that cannot be written: no further call starts; answers kept are kept
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    stats.judged = sum(1 for v in verdicts if v is not None and v["passed"] is not None)
    stats.errors = stats.cases - stats.judged
    stats.unreadable = stats.errors - stats.failed
    stats.seconds = time.perf_counter() - started
    return verdicts, stats
