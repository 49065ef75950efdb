"""Reading a garak report.jsonl one line at a time, keeping only what the cases need (``reporting.importers.garak``
maps it to cases). A generated (status 1) attempt line as garak writes it is told by its first bytes and kept as
bytes until its judged line arrives; a judged line is parsed without its conversations when in garak's own key
order. Both shortcuts fall back to parsing the whole line, and a test checks both ways give the same run."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Optional

from reporting.format.problems import Problem
from reporting.format.strict_json import strict_line, strict_loads
from reporting.importers.conversations import MAX_TURNS, garak_turns


def _text(value: Any) -> Optional[str]:
    """A message's text: a Message dict (0.13+) or a plain string (up to 0.12); None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text")
        return text if isinstance(text, str) or text is None else str(text)
    return str(value)


def _prompt_text(prompt: Any) -> Optional[str]:
    """The last user turn of a Conversation dict (0.13+), or the prompt string itself (up to 0.12)."""
    if isinstance(prompt, dict):
        given = prompt.get("turns")
        turns = [t for t in given if isinstance(t, dict)] if isinstance(given, list) else []
        users = [t for t in turns if t.get("role") == "user"] or turns
        return _text(users[-1].get("content")) if users else None
    return _text(prompt)


def first_object(data: bytes) -> Optional[dict[str, Any]]:
    """The first line of JSON Lines as an object, however long it is (the caller's size cap bounds it), or None
    when that line is not a whole JSON object (a head cut short, another format)."""
    text = data.lstrip()
    if not text.startswith(b"{"):
        return None
    end = text.find(b"\n")
    value, problems = strict_loads("", text if end < 0 else text[:end])
    return value if not problems and isinstance(value, dict) else None


# Multi-turn probes (fitd.FITD, goat.GOATAttack, agent_breaker; atkgen too) write
# attempts with "seq": null, one attempt per turn. The note naming the attack's goal groups one attack's attempts.
ATTACK_KEYS = ("target_turn", "attack_goal")  # FITD, GOAT
_STRATEGY = re.compile(r"^\s*Strategy:\s*(\S[^\n]*?)\s*$", re.MULTILINE)  # GOAT's Observation/Thought/Strategy


def _turns(holder: Any) -> list[Any]:
    turns = holder.get("turns") if isinstance(holder, dict) else None
    return turns if isinstance(turns, list) else []


def _multi_turn(turns: list[Any]) -> bool:
    """More than one user turn, or any system turn: a conversation kept whole (else probe_input and response
    say it all, and single-turn runs keep their size). Told from the roles before any turn is converted."""
    users = 0
    for turn in turns:
        role = turn.get("role") if isinstance(turn, dict) else None
        role = role.strip().lower() if isinstance(role, str) else None
        if role in ("system", "developer"):
            return True
        users += role in ("user", "human")
    return users > 1


def _conversations(entry: dict[str, Any]) -> Optional[list[Optional[tuple[list[dict[str, Any]], Any, Any]]]]:
    """Per generation, ``(messages, judged_turn, turns in the file when more than were kept)`` of its conversation
    (``conversations[g]``, else the prompt's turns and the output) when it is multi-turn; None when none is."""
    given = entry.get("conversations")
    given = given if isinstance(given, list) else []
    prompt = _turns(entry.get("prompt"))
    found: list[Optional[tuple[list[dict[str, Any]], Any, Any]]] = []
    for g, output in enumerate(entry.get("outputs") or []):
        turns = _turns(given[g]) if g < len(given) else [*prompt, {"role": "assistant", "content": output}]
        if not _multi_turn(turns):
            found.append(None)
            continue
        messages, judged = garak_turns({"turns": turns})
        cut = len(messages) >= MAX_TURNS and len(turns) > len(messages)
        found.append((messages, None if cut else judged, len(turns) if cut else None))
    return found if any(found) else None


def _turn_number(entry: dict[str, Any]) -> Optional[int]:
    """GOAT's turn number: ``prompt.notes.turn``, else ``conversations[0].notes.turn``."""
    given = entry.get("conversations")
    for holder in (entry.get("prompt"), given[0] if isinstance(given, list) and given else None):
        notes = holder.get("notes") if isinstance(holder, dict) else None
        turn = notes.get("turn") if isinstance(notes, dict) else None
        if isinstance(turn, int) and not isinstance(turn, bool):
            return turn
    return None


def _strategy(entry: dict[str, Any], notes: dict[str, Any]) -> Optional[str]:
    """The buff that made the attempt, else the attack technique of the judged turn (GOAT writes ``Strategy:
    <technique>`` in each of its attacker's answers, ``notes.attacker_conversation``); None when neither."""
    buff = notes.get("buff_creator")
    if isinstance(buff, str) and buff:
        return buff[:200]
    attacker = notes.get("attacker_conversation")
    turns = attacker.get("turns") if isinstance(attacker, dict) else None
    techniques = []
    for turn in turns if isinstance(turns, list) else ():
        if isinstance(turn, dict) and turn.get("role") == "assistant":
            found = _STRATEGY.search(_text(turn.get("content")) or "")
            techniques.append(found.group(1)[:200] if found else None)
    if not techniques:
        return None
    number = _turn_number(entry)
    if number is not None and 1 <= number <= len(techniques) and techniques[number - 1]:
        return techniques[number - 1]
    return next((t for t in reversed(techniques) if t), None)


# A status-1 (generated) attempt line as garak writes it, told without parsing the line: its key is all the
# reader needs unless the attempt is never judged. Any other shape is parsed in full.


_GENERATED = re.compile(
    rb'^\{"entry_type": "attempt", "uuid": "([^"\\]*)", "seq": (-?\d+), "status": 1, "probe_classname": "([^"\\]*)"'
)


_ATTEMPT = b'{"entry_type": "attempt", '
_CONVERSATIONS = b', "conversations": ['
_INTENT = b', "intent": '


def _judged_without_conversations(raw: bytes) -> Optional[dict[str, Any]]:
    """A judged attempt line parsed without its ``conversations`` (they repeat the prompt and the outputs: half
    the line). None when the line is anything else or not in garak's own key order: it is then parsed in full.

    A raw ``"`` is never inside a JSON string, so ``, "conversations": [`` is structure; the head before it
    parses as an object only when the key is the attempt's own (a nested one leaves a brace open), and the
    ``intent`` after it, garak's last key, only when nothing follows it but the attempt's closing brace. What lies
    between (the conversations, not read) must be JSON by its syntax."""
    if not raw.startswith(_ATTEMPT):
        return None
    cut = raw.find(_CONVERSATIONS)
    if cut < 0:
        return None
    entry, problems = strict_loads("", raw[:cut] + b"}")
    if problems or not isinstance(entry, dict) or entry.get("status") != 2 or "conversations" in entry:
        return None  # (a key written twice, one before the cut spaced otherwise: the full parse names it)
    if raw.find(b'"role": "system"', cut) >= 0 or _multi_turn(_turns(entry.get("prompt"))):
        return None  # a multi-turn conversation: the case keeps it, so the line is parsed in full
    if not _well_formed(raw):
        return None  # the conversations (never read here) not JSON: the full parse names what is wrong
    last = raw.rfind(_INTENT)
    if last > cut:
        tail, problems = strict_loads("", b"{" + raw[last + 2 :])
        if problems or not isinstance(tail, dict) or list(tail) != ["intent"]:
            return None
        entry["intent"] = tail["intent"]
    return entry


_SKIM: list[Any] = []  # msgspec's decoder of a value kept raw, made at the first use


def _well_formed(data: bytes) -> bool:
    """Whether ``data`` is one JSON value in UTF-8 by its syntax (msgspec skims the line making no value, 2 us; a key
    given twice or a number beyond a float's range, which the full parse refuses, is not looked for in the part
    never read)."""
    import msgspec

    if not _SKIM:
        _SKIM.append(msgspec.json.Decoder(msgspec.Raw))
    try:
        data.decode("utf-8")
        _SKIM[0].decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
        return False
    return True


class _Run:
    def __init__(self) -> None:
        self.setup: dict[str, Any] = {}
        self.init: dict[str, Any] = {}
        self.probes: dict[str, dict[str, Any]] = {}
        self.detectors: dict[str, dict[str, Any]] = {}
        # (uuid, probe, seq) -> the judged attempt, slimmed to what the cases need (some files reuse one uuid for
        # every attempt, so the uuid alone is not a key)
        self.judged: dict[tuple[str, str, str], dict[str, Any]] = {}
        # status-1 attempts not (yet) judged: their line, parsed only if it is never judged
        self.generated: dict[tuple[str, str, str], tuple[int, bytes]] = {}
        self.evals: list[dict[str, Any]] = []
        self.digest: dict[str, Any] = {}  # the report digest garak writes last (0.14 and later)
        self.completed = False


def _attempt_problem(label: str, number: int, entry: dict[str, Any]) -> Optional[Problem]:
    """An attempt whose fields are not of the shapes garak writes: outputs an array, detector results an object
    of arrays of scores, notes and a prompt's turns what they should be."""
    where = f"line {number}"
    outputs = entry.get("outputs")
    if outputs is not None and not isinstance(outputs, list):
        return Problem(label, f"{where}.outputs", "must be an array of outputs", outputs)
    results = entry.get("detector_results")
    if results is not None and not isinstance(results, dict):
        return Problem(label, f"{where}.detector_results", "must be an object of detector scores", results)
    for name, scores in (results or {}).items():
        if scores is not None and not isinstance(scores, list):
            return Problem(label, f"{where}.detector_results.{name}", "must be an array of scores", scores)
        for i, score in enumerate(scores or ()):
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                return Problem(label, f"{where}.detector_results.{name}[{i}]", "must be a number or null", score)
    notes = entry.get("notes")
    if notes is not None and not isinstance(notes, dict):
        return Problem(label, f"{where}.notes", "must be an object", notes)
    prompt = entry.get("prompt")
    if isinstance(prompt, dict) and prompt.get("turns") is not None and not isinstance(prompt.get("turns"), list):
        return Problem(label, f"{where}.prompt.turns", "must be an array of turns", prompt.get("turns"))
    return None


def _slim(entry: dict[str, Any], single_turn: bool = False) -> dict[str, Any]:
    """An attempt without what the cases do not use (single-turn conversations, message metadata, ...).
    ``single_turn``: the attempt is known to hold no multi-turn conversation (``_judged_without_conversations``:
    its prompt is single-turn and its conversations were not read, so each is its prompt and an output)."""
    notes = _notes(entry)
    attack = next((notes[k] for k in ATTACK_KEYS if isinstance(notes.get(k), str) and notes[k]), None)
    previous = notes.get("previous_attempt_id")  # atkgen: each turn names the attempt before it
    adversarial = notes.get("is_adversarial")
    return {
        "uuid": entry.get("uuid"),
        "seq": entry.get("seq"),
        "probe_classname": entry.get("probe_classname"),
        "goal": entry.get("goal"),
        "intent": entry.get("intent"),
        "prompt_text": _prompt_text(entry.get("prompt")),
        "outputs": [_text(o) for o in entry.get("outputs") or []],
        "detector_results": entry.get("detector_results") or {},
        "triggers": notes.get("triggers"),
        "attack": attack,
        "previous": previous if isinstance(previous, str) else None,
        "adversarial": adversarial if isinstance(adversarial, bool) else None,
        "strategy": _strategy(entry, notes),
        "conversations": None if single_turn else _conversations(entry),
    }


def _notes(entry: dict[str, Any]) -> dict[str, Any]:
    notes = entry.get("notes")
    return notes if isinstance(notes, dict) else {}


def _key(entry: dict[str, Any]) -> tuple[str, str, str]:
    return (str(entry.get("uuid")), str(entry.get("probe_classname")), str(entry.get("seq")))


def _read(lines: Iterable[bytes], label: str, problems: list[Problem]) -> _Run:
    run = _Run()
    for number, raw in enumerate(lines, start=1):
        generated = _GENERATED.match(raw)
        if generated is not None:
            uuid, seq, probe = (part.decode("utf-8", "replace") for part in generated.groups())
            key = (uuid, probe, str(int(seq)))
            if key not in run.judged:
                run.generated[key] = (number, raw)
            continue
        if not raw.strip():
            continue
        judged = _judged_without_conversations(raw)
        if judged is not None:
            wrong = _attempt_problem(label, number, judged)
            if wrong is not None:
                problems.append(wrong)
                continue
            key = _key(judged)
            run.judged[key] = _slim(judged, single_turn=True)
            run.generated.pop(key, None)
            continue
        entry, errors = strict_line(label, raw, number)
        if errors:
            problems.extend(errors)
            continue
        if not isinstance(entry, dict):
            problems.append(Problem(label, f"line {number}", "not a JSON object", entry))
            continue
        kind = entry.get("entry_type")
        if kind == "attempt":
            wrong = _attempt_problem(label, number, entry)
            if wrong is not None:
                problems.append(wrong)
                continue
            key = _key(entry)
            if entry.get("status") == 2:
                run.judged[key] = _slim(entry)
                run.generated.pop(key, None)
            elif key not in run.judged:
                run.generated[key] = (number, raw)
        elif kind == "start_run setup":
            run.setup = entry
        elif kind == "init":
            run.init = entry
        elif kind == "plugin_cache":
            cache = entry.get("plugin_cache") or {}
            for field, kept in (("probes", run.probes), ("detectors", run.detectors)):
                found = cache.get(field) if isinstance(cache, dict) else None
                if found is not None and not isinstance(found, dict):
                    problems.append(Problem(label, f"line {number}.plugin_cache.{field}", "must be an object", found))
                else:
                    kept.update(found or {})
        elif kind == "eval":
            run.evals.append({k: v for k, v in entry.items() if k != "entry_type"})
        elif kind == "completion":
            run.completed = True
        elif kind == "digest":
            run.digest = entry
    return run


def _never_judged(run: _Run, label: str, problems: list[Problem]) -> list[dict[str, Any]]:
    """The attempts generated but never judged, parsed now (the only status-1 lines that are)."""
    found = []
    for number, raw in run.generated.values():
        entry, errors = strict_line(label, raw, number)
        if errors:
            problems.extend(errors)
            continue
        if isinstance(entry, dict):
            wrong = _attempt_problem(label, number, entry)
            if wrong is not None:
                problems.append(wrong)
                continue
            found.append(_slim(entry))
    run.generated.clear()
    return found
