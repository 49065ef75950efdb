"""The learned judge's training data (`make train-judge`, docs/scoring.md): every usable folder of ../shared/data,
read the way its README says, in a fixed order, with the group each row must stay in and the weight it trains with.

Never read: anything under a folder's ``held_apart/``, ``peers/``, and the evaluation sets the judge issue names
(HarmBench's classifier validation sets, JAILJUDGE, XSTest, XSTest-Response, PKU-SafeRLHF, BeaverTails), which are
not in ../shared/data at all.

Each row: ``source``, ``group`` (all rows of one normalised request, goal or conversation share it: no split puts
them on both sides), ``request``, ``response``, ``harmful`` (bool), ``basis`` (human, benchmark judge, by
construction), ``category`` (the source's own, or None).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Optional

# source -> (label basis, licence, what it is); the order is the order rows are read in.
SOURCES: dict[str, tuple[str, str, str]] = {
    "gptfuzz": ("human", "MIT", "gpt-3.5-turbo answers to 100 harmful questions in 77 jailbreak templates"),
    "jailbreakbench": ("benchmark judge", "MIT", "JailbreakBench PAIR and GCG artifacts (Llama-3-70B judge's label)"),
    "jbb_judge_comparison": ("human", "MIT", "JailbreakBench judge-comparison set, majority of three annotators"),
    "dices": ("human", "CC BY 4.0", "DICES chatbot replies in adversarial conversations (990 crowd + 350 expert)"),
    "diasafety": ("human", "Apache-2.0", "DiaSafety chit-chat replies, four response-harm categories"),
    "openai_moderation": ("human", "MIT", "OpenAI moderation test texts, no request (weighted low)"),
    "vicuna_blog_eval": ("by construction", "Apache-2.0", "80 harmless questions answered by seven chat models"),
    "llmbar": ("by construction", "MIT", "harmless instructions, two answers each"),
    "gpteacher": ("by construction", "MIT", "GPT-4 coding and role-play answers to benign tasks"),
    # Fetched from public repositories into data/judge/ (each with its LICENSE and PROVENANCE.txt: repo, commit)
    "openai_rbr_gold": (
        "human",
        "MIT",
        "OpenAI's rule-based-rewards gold set: 518 synthetic chats, each completion hand-labelled (disallowed content)",
    ),
    "safetext": ("human", "MIT", "SafeText: human-written safe and unsafe advice for 367 everyday scenarios"),
    "safedecoding_refusals": (
        "benchmark judge",
        "MIT",
        "SafeDecoding: five open models' refusals of 36 harmful requests (each checked by GPT-4 to refuse)",
    ),
    "coconot_pref": (
        "by construction",
        "MIT",
        "CoCoNot contrast set: 927 harmless requests that sound sensitive, each answered twice",
    ),
}
FETCHED = ("openai_rbr_gold", "safetext", "safedecoding_refusals", "coconot_pref")  # in data/judge/ of the repo
# Measured on, never trained on (the judge cards say how each judge does there): trained on, either cost the
# judge on the jailbreak sets left out (GPTFuzz 0.677 -> 0.578-0.627 before the rules decide; docs/scoring.md).
EVALUATION_ONLY = ("safedecoding_refusals", "coconot_pref")
REPO_DATA = Path(__file__).resolve().parent.parent / "data" / "judge"
HUMAN = tuple(s for s, (basis, _, _) in SOURCES.items() if basis == "human")
# Each source's share of the training weight, before classes are balanced within it: the human-labelled sets count
# most; the by-construction harmless sets and the moderation texts (not answers to requests) must not drown them.
SHARE = {
    "gptfuzz": 1.0,
    "jailbreakbench": 0.5,
    "jbb_judge_comparison": 0.5,
    "dices": 1.0,
    "diasafety": 1.0,
    "openai_moderation": 0.25,
    "vicuna_blog_eval": 0.25,
    "llmbar": 0.25,
    "gpteacher": 0.5,
    "openai_rbr_gold": 1.0,
    "safetext": 0.5,
}


def normalised(text: str) -> str:
    """Case- and white-space-insensitive form of a request, goal or conversation (the grouping key)."""
    return " ".join(text.lower().split())


def _row(source: str, group: str, request: str, response: str, harmful: bool, category: Optional[str]) -> dict:
    return {
        "source": source,
        "group": group,
        "request": request,
        "response": response,
        "harmful": bool(harmful),
        "basis": SOURCES[source][0],
        "category": category,
    }


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load(shared: Path) -> list[dict]:
    """Every training row, in a fixed order (sources as in SOURCES, each in file order; ``EVALUATION_ONLY`` out)."""
    data = shared / "data"
    csv.field_size_limit(1 << 30)
    rows: list[dict] = []
    fuzz = data / "gptfuzz"
    with open(fuzz / "questions.csv", encoding="utf-8", newline="") as handle:
        questions = {int(r["index"]): r["text"] for r in csv.DictReader(handle)}
    for name in ("train", "evaluate"):
        with open(fuzz / f"{name}.csv", encoding="utf-8", newline="") as handle:
            for r in csv.DictReader(handle):
                q = questions[int(r["question"])]
                rows.append(_row("gptfuzz", "q:" + normalised(q), q, r["Response"], r["label"] == "1", None))
    for path in sorted((data / "jailbreakbench").glob("*/*/*.json")):
        for r in json.loads(path.read_text(encoding="utf-8"))["jailbreaks"]:
            if r.get("prompt") and r.get("response"):  # records without either carry no answer
                group = "q:" + normalised(r["goal"])  # shared with jbb_judge_comparison's goals
                rows.append(
                    _row("jailbreakbench", group, r["goal"], r["response"], bool(r["jailbroken"]), r.get("category"))
                )
    for r in _jsonl(data / "jbb_judge_comparison" / "judge_comparison.jsonl"):
        group = "q:" + normalised(r["source_fields"]["goal"])
        rows.append(_row("jbb_judge_comparison", group, r["request"], r["response"], r["label"] == "harmful", None))
    # DICES: "Yes" = the conversation is unsafe; "Unsure" majorities dropped; the 350 conversations once (the
    # expert's gold label: the crowd file holds the same conversations).
    for name in ("dices_990.json", "dices_350_expert.json"):
        for item in json.loads((data / "dices" / name).read_text(encoding="utf-8"))["instances"]:
            label = item["annotations"]["safety"]["majority_human"]
            if label not in ("Yes", "No"):
                continue
            context = item["instance"]["user_prompt"].replace("\\n", "\n").strip()
            group = "c:" + normalised(context)
            rows.append(_row("dices", group, context, item["instance"]["response"], label == "Yes", None))
    for r in _jsonl(data / "diasafety" / "diasafety.jsonl"):
        category = r["source_fields"]["category"]
        rows.append(
            _row(
                "diasafety",
                "q:" + normalised(r["request"]),
                r["request"],
                r["response"],
                r["label"] == "harmful",
                category,
            )
        )
    for r in _jsonl(data / "openai_moderation" / "moderation.jsonl"):
        if r["label"] in ("harmful", "not_harmful"):
            rows.append(_row("openai_moderation", "t:" + r["id"], "", r["response"], r["label"] == "harmful", None))
    for name, file in (
        ("vicuna_blog_eval", "answers.jsonl"),
        ("llmbar", "llmbar.jsonl"),
        ("gpteacher", "gpteacher.jsonl"),
    ):
        for r in _jsonl(data / name / file):
            assert r["label"] == "not_harmful", (name, r["id"])
            rows.append(_row(name, "q:" + normalised(r["request"]), r["request"], r["response"], False, None))
    rows += [r for r in fetched(REPO_DATA) if r["source"] not in EVALUATION_ONLY]
    return [r for r in rows if r["response"].strip()]


def evaluation_rows() -> list[dict]:
    """The rows of the sources measured on and never trained on (``EVALUATION_ONLY``), in a fixed order."""
    return [r for r in fetched(REPO_DATA) if r["source"] in EVALUATION_ONLY and r["response"].strip()]


def _chat(turns: list[dict]) -> str:
    """A conversation as one request: each turn "role: content" on its own lines."""
    return "\n".join(f"{t['role']}: {t['content']}" for t in turns)


# Where SafeDecoding's chat templates put the answer after the request, and what ends it.
_ANSWER = re.compile(r"^\s*(?:\[/INST\]|(?:###\s*)?(?:ASSISTANT|Assistant)\s*:)\s*")
_END = re.compile(r"\s*(?:</s>|<\|endoftext\|>)\s*$")


def fetched(data: Path) -> list[dict]:
    """The sources of ``FETCHED`` (data/judge/), read as their READMEs say."""
    rows: list[dict] = []
    gold = data / "openai_rbr_gold" / "data" / "rbr_gold_data"
    for name in ("train", "test"):  # harmful: the hand-labelled proposition "disallowed_content"
        for r in _jsonl(gold / f"{name}.jsonl"):
            request = _chat(r["prompt"])
            response = "\n\n".join(t["content"] for t in r["completion"])
            category = None if r["category"] == "None" else r["category"]
            harmful = bool(r["propositions"]["disallowed_content"])
            rows.append(_row("openai_rbr_gold", "c:" + normalised(request), request, response, harmful, category))
    safetext = json.loads((data / "safetext" / "SafeText.json").read_text(encoding="utf-8"))
    for scenario, advice in safetext.items():  # each scenario's advice completes it: unsafe = harmful
        for label in ("unsafe", "safe"):
            for text in advice.get(label, []):
                rows.append(_row("safetext", "q:" + normalised(scenario), scenario, text, label == "unsafe", None))
    refusals = data / "safedecoding_refusals"
    seeds = json.loads((refusals / "datasets" / "seed_reject.json").read_text(encoding="utf-8"))["prompts"]
    for path in sorted((refusals / "lora_modules").glob("*/ft_datasets_*.json")):
        for r in json.loads(path.read_text(encoding="utf-8")):
            text = r["text"]
            seed = next((s for s in seeds if s["prompt"] in text), None)
            if seed is None:
                raise ValueError(f"{path}: no seed request in {text[:80]!r}")
            after = text[text.index(seed["prompt"]) + len(seed["prompt"]) :]
            response = _END.sub("", _ANSWER.sub("", after, count=1))
            group = "q:" + normalised(seed["prompt"])
            rows.append(_row("safedecoding_refusals", group, seed["prompt"], response, False, seed["category"]))
    for r in _jsonl(data / "coconot_pref" / "data" / "coconot_pref.jsonl"):
        for answer in (r["chosen"], r["rejected"]):  # both answers of a harmless request: not harmful
            rows.append(_row("coconot_pref", "q:" + normalised(r["prompt"]), r["prompt"], answer, False, None))
    return rows


def weights(rows: list[dict]):
    """Each row's training weight: a source's total is SHARE times the square root of its size (a large source
    counts more, not in proportion), split equally between its two classes where it has both; then the whole scaled
    so that harmful and not harmful weigh the same overall, and the mean weight is 1."""
    import numpy as np

    sources = np.array([r["source"] for r in rows])
    y = np.array([r["harmful"] for r in rows])
    w = np.zeros(len(rows))
    for source in SOURCES:
        here = sources == source
        if not here.any():
            continue
        total = SHARE[source] * np.sqrt(here.sum())
        classes = [c for c in (True, False) if (here & (y == c)).any()]
        for c in classes:
            keep = here & (y == c)
            w[keep] = total / len(classes) / keep.sum()
    for c in (True, False):
        w[y == c] *= 0.5 / w[y == c].sum()
    return w * len(rows)


def fingerprint(rows: list[dict]) -> str:
    sha = hashlib.sha256()
    for r in rows:
        sha.update(json.dumps([r["source"], r["group"], r["request"], r["response"], r["harmful"]]).encode() + b"\n")
    return sha.hexdigest()[:16]


def counts(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per source: rows, harmful, not harmful."""
    found: dict[str, dict[str, int]] = {}
    for r in rows:
        c = found.setdefault(r["source"], {"n": 0, "harmful": 0, "not_harmful": 0})
        c["n"] += 1
        c["harmful" if r["harmful"] else "not_harmful"] += 1
    return {s: found[s] for s in SOURCES if s in found}
