"""Search speed and retrieval quality.

.venv/bin/python benchmarks/run.py search             # speed and quality rows in the table
.venv/bin/python benchmarks/bench_search.py --quality [--split dev|held_out]
.venv/bin/python benchmarks/bench_search.py --tokenizers   # CJK terms: bigrams vs jieba

Speed: one scope of 1,000 facts (the English and the Chinese 500-fact memories of the
labelled set together), the set's 186 queries in turn, after one warm-up pass; p50/p95 of
single ``Memory.search`` calls on each store, and what ``query=`` adds to ``context()``.
Quality: see ``_retrieval.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _retrieval

from memfold import Memory
from memfold.search import _terms

Row = dict[str, Any]


def _combined() -> dict[str, Any]:
    """The two 500-fact memories as one 1,000-fact document."""
    english = _retrieval.memory_data("en")
    english["facts"] = english["facts"] + _retrieval.memory_data("zh")["facts"]
    return english


def _all_queries() -> list[str]:
    return [q["query"] for lang in _retrieval.LANGUAGES for q in _retrieval.queries(lang)]


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _timed(
    call: Callable[[str], object],
    texts: Sequence[str],
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Milliseconds of each call by ``clock``: wall time, or ``time.thread_time`` for the
    CPU time of this thread alone (what a busy shared machine does not inflate)."""
    samples = []
    for _ in range(rounds):
        for text in texts:
            started = clock()
            call(text)
            samples.append((clock() - started) * 1000)
    return samples


class HashEmbedder:
    """An in-process stand-in for an embeddings endpoint (hashed word and character
    features, 256 dimensions): it measures fusion and cosine cost, not quality."""

    name = "bench-hash-256"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * 256
            for term in _terms.terms(text):
                digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
                vector[int.from_bytes(digest[:2], "big") % 256] += 1.0 if digest[2] % 2 else -1.0
            if not any(vector):
                vector[0] = 1.0
            out.append(vector)
        return out


@contextmanager
def _memory(storage: str, **overrides: Any) -> Iterator[Memory]:
    with tempfile.TemporaryDirectory() as home:
        if storage == "postgres":
            import bench_sql

            with bench_sql._postgres_server(Path(home)) as dsn:
                if dsn is None:
                    raise LookupError("no PostgreSQL server")
                memory = Memory(
                    storage="postgres", dsn=dsn, start_workers=False, max_facts=2000, **overrides
                )
                try:
                    memory.import_document(_combined(), user_id="bench")
                    yield memory
                finally:
                    memory.clear(user_id="bench")
                    memory.close()
            return
        if storage == "memory":
            from memfold.testing import InMemoryStore

            memory = Memory(store=InMemoryStore(), start_workers=False, max_facts=2000, **overrides)
        else:
            memory = Memory(
                home=Path(home), storage=storage, start_workers=False, max_facts=2000, **overrides
            )
        try:
            memory.import_document(_combined(), user_id="bench")
            yield memory
        finally:
            memory.close()


def speed_rows(quick: bool) -> list[Row]:
    texts = _all_queries()
    rounds = 1 if quick else 5
    rows: list[Row] = []
    for storage in ("memory", "json", "sqlite", "postgres"):
        try:
            with _memory(storage) as memory:
                started = time.perf_counter()
                memory.search("warm up the index", user_id="bench")
                build_ms = (time.perf_counter() - started) * 1000
                _timed(lambda q, m=memory: m.search(q, user_id="bench"), texts, 1)
                p50, p95 = _percentiles(
                    _timed(lambda q, m=memory: m.search(q, user_id="bench"), texts, rounds)
                )
                cpu95 = _percentiles(
                    _timed(
                        lambda q, m=memory: m.search(q, user_id="bench"),
                        texts,
                        rounds,
                        time.thread_time,
                    )
                )[1]
        except LookupError:
            print("# bench_search: no PostgreSQL server, its rows are left out", file=sys.stderr)
            continue
        rows.append(_row(f"search p50 / 1,000 facts warm ({storage} store)", p50, "≤ 2 ms p95"))
        rows.append(_row(f"search p95 / 1,000 facts warm ({storage} store)", p95, "≤ 2 ms"))
        rows.append(_row(f"search p95, CPU time of the call ({storage} store)", cpu95, "≤ 2 ms"))
        if storage == "memory":
            rows.append(_row("first search of a 1,000-fact scope (index build)", build_ms, ""))
    with _memory("memory") as memory:

        def plain(_: str) -> str:
            return memory.context(user_id="bench")

        def with_query(q: str) -> str:
            return memory.context(user_id="bench", query=q)

        plain("")  # warm: token counts, the index, the cached blocks
        _timed(with_query, texts, 1)
        base = _percentiles(_timed(plain, texts, rounds))[0]
        repeated = _percentiles(_timed(with_query, texts, rounds))[0]
        memory._renderer.clear()  # every message new: no block cached for its order
        fresh = []
        for text in texts:
            memory._renderer.clear()
            plain("")
            started = time.perf_counter()
            with_query(text)
            fresh.append((time.perf_counter() - started) * 1000)
        fresh_p50 = statistics.median(fresh)
    rows.append(_row("context() without query (cached block), p50", base, ""))
    rows.append(_row("context(query=) new message, p50", fresh_p50, ""))
    rows.append(_row("context(query=) repeated message (cached block), p50", repeated, ""))
    with _memory("memory", embedder=HashEmbedder()) as memory:
        memory.search("warm up", user_id="bench")
        _timed(lambda q, m=memory: m.search(q, user_id="bench"), texts, 1)
        p50, p95 = _percentiles(
            _timed(lambda q, m=memory: m.search(q, user_id="bench"), texts, rounds)
        )
    rows.append(_row("hybrid search p95, 1,000 facts, in-process 256-d embedder", p95, ""))
    return rows


def _row(name: str, value: float, target: str, unit: str = "ms") -> Row:
    return {"benchmark": name, "value": value, "unit": unit, "target": target, "reference": "none"}


def quality_rows(splits: Sequence[str]) -> list[Row]:
    rows: list[Row] = []
    with _retrieval.loaded_memory() as memory:
        for split in splits:
            for language in _retrieval.LANGUAGES:
                s = _retrieval.score(memory, language, split)
                where = f"{language} {split}, {s.queries} queries"
                rows.append(_row(f"recall@5 search ({where})", s.recall_at_5 * 100, "", "%"))
                rows.append(
                    _row(
                        f"answer injected at 2,000, relevant ({where})",
                        s.injected_relevant * 100,
                        "",
                        "%",
                    )
                )
                rows.append(
                    _row(
                        f"answer injected at 2,000, per_call ({where})",
                        s.injected_per_call * 100,
                        "",
                        "%",
                    )
                )
    return rows


def _bigrams_only(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def tokenizer_rows(split: str) -> list[Row]:
    """Chinese recall@5 with each way of cutting CJK text into terms (English unchanged)."""
    variants: dict[str, Callable[[str], list[str]]] = {
        "characters + bigrams (shipped)": _terms._cjk_terms,
        "bigrams only": _bigrams_only,
    }
    try:
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
        variants["jieba cut"] = lambda run: [w for w in jieba.cut(run) if w.strip()]
        variants["jieba cut_for_search"] = lambda run: [
            w for w in jieba.cut_for_search(run) if w.strip()
        ]
    except ImportError:
        print("# jieba is not installed: pip install jieba to compare it", file=sys.stderr)
    shipped = _terms._cjk_terms
    texts = [f["content"] for f in _retrieval.memory_data("zh")["facts"]]
    texts += [q["query"] for q in _retrieval.queries("zh")]
    rows = []
    try:
        for name, cut in variants.items():
            _terms._cjk_terms = cut  # type: ignore[assignment]
            for text in texts:  # warm up (a segmenter loads its dictionary on first use)
                cut(text)
            _terms._terms.cache_clear()
            started = time.perf_counter()
            for text in texts:
                _terms.terms(text)
            took = (time.perf_counter() - started) / len(texts) * 1e6
            with _retrieval.loaded_memory() as memory:
                result = _retrieval.score(memory, "zh", split)
            rows.append(_row(f"zh recall@5, {name} ({split})", result.recall_at_5 * 100, "", "%"))
            rows.append(_row(f"zh terms of one fact or query, {name}", took, "", "µs"))
    finally:
        _terms._cjk_terms = shipped
        _terms._terms.cache_clear()
    return rows


def run(quick: bool) -> list[Row]:
    return speed_rows(quick) + quality_rows(_retrieval.SPLITS)


def _print(rows: list[Row]) -> None:
    width = max(len(r["benchmark"]) for r in rows)
    for r in rows:
        value = r["value"]
        shown = f"{value:.1f}" if r["unit"] == "%" else f"{value:.3f}"
        print(f"{r['benchmark']:<{width}}  {shown:>9} {r['unit']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality", action="store_true", help="recall and injection figures")
    parser.add_argument("--tokenizers", action="store_true", help="compare CJK tokenisations")
    parser.add_argument("--split", choices=(*_retrieval.SPLITS, "both"), default="both")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    splits = _retrieval.SPLITS if args.split == "both" else (args.split,)
    rows: list[Row] = []
    if args.quality:
        rows += quality_rows(splits)
    if args.tokenizers:
        for split in splits:
            rows += tokenizer_rows(split)
    if not (args.quality or args.tokenizers):
        rows = speed_rows(args.quick)
    _print(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
