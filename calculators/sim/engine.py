"""One replica's scheduler, after vLLM's: continuous batching, chunked prefill, paged KV blocks.

Each engine step is planned at its start (:meth:`ReplicaEngine.plan`) and
takes effect at its end (:meth:`ReplicaEngine.commit`). A plan, in order:

1. every decoding sequence gets one token; the ones whose next token starts a
   new KV block get one, and while the free blocks do not cover them the
   newest running sequence is preempted (recompute: its blocks are freed and it
   goes back to the head of the queue, to prefill its prompt and the tokens it
   had produced);
2. sequences part-way through their prefill get their next chunk, up to the
   step's token budget (``max_batched_tokens``), in the order they were
   admitted, preempting the newest running sequence for blocks the same way;
3. if nothing was preempted, waiting requests are admitted first come first
   served while the budget, ``max_num_seqs`` and the free blocks allow (the
   head of the queue blocks the rest, as in vLLM); a request whose group's
   prefix is cached skips those tokens (prefix-cache hit, whole blocks only).

The capacity policy (docs/architecture.md §13) is ``preempt`` (above: vLLM's) or ``no-evict`` (TensorRT-LLM's
default, GUARANTEED_NO_EVICT): a request is admitted only when the blocks its whole life needs (prompt and
output) fit beside what every running sequence has reserved for its own, so a running sequence never loses
its blocks and nothing is ever preempted; the cost is fewer sequences at once.

The step's time is :func:`~calculators.engine.step_model.step_ms` of that
plan (docs/architecture.md §12's step with prefill). Decoders advance together, so no
work is done per decoder per step: they are counted by the step at which
they joined, their contexts are one running sum, their block boundaries are
counted per phase modulo the block size, and their finishes sit in a heap.
A prefill that completes yields a token (the first one: TTFT).

A cached prefix is pinned while a running sequence uses it and evictable
(least recently released first) otherwise.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque

from calculators.engine.step_model import Replica, step_ms

WAITING, PREFILL, DECODE, DONE = range(4)
CAPACITY_POLICIES = ("preempt", "no-evict")
PROBE_TOKENS = 1 << 20  # the second context at which a decode step's two lines are read


class Sequence:
    """One request inside a replica: ``rid`` (index into the run's records), ``prompt``, ``output``
    and ``shared`` tokens, ``group``; ``total`` tokens to prefill (prompt, plus what it had produced
    if preempted), ``computed`` of them, ``hit`` (prefix-cache tokens), ``generated`` tokens."""

    __slots__ = ("rid", "prompt", "output", "shared", "group", "total", "computed", "hit", "own", "generated",
                 "ctx_join", "s_join", "key", "state", "epoch", "last_token_ms", "join_ms", "reserved")

    def __init__(self, rid: int, prompt: int, output: int, shared: int, group: int):
        self.rid, self.prompt, self.output, self.shared, self.group = rid, prompt, output, shared, group
        self.total, self.computed, self.hit, self.own, self.generated = prompt, 0, 0, 0, 0
        self.ctx_join = self.s_join = self.key = self.epoch = self.reserved = 0
        self.state = WAITING
        self.last_token_ms = self.join_ms = 0.0


class Records:
    """Per-request outcomes of a run (lists indexed by request id) and the inter-token samples:
    ``itl_ms[i]`` observed ``itl_count[i]`` times."""

    def __init__(self, count: int):
        self.first_ms = [None] * count
        self.finish_ms = [None] * count
        self.generated = [0] * count
        self.itl_ms: list[float] = []
        self.itl_count: list[int] = []
        self.finished: list[int] | None = None  # a closed loop's: requests finished since the run last looked

    def first(self, count: int) -> "Records":
        """The records of the first ``count`` requests (the inter-token samples whole)."""
        kept = Records(0)
        kept.first_ms, kept.finish_ms = self.first_ms[:count], self.finish_ms[:count]
        kept.generated, kept.itl_ms, kept.itl_count = self.generated[:count], self.itl_ms, self.itl_count
        return kept


class ReplicaEngine:
    """The scheduler of one replica: ``replica`` (step model), ``blocks`` KV blocks of
    ``block_size`` tokens, the step's token budget and sequence limit, the ``capacity_policy``
    (:data:`CAPACITY_POLICIES`); outcomes go to ``records``."""

    def __init__(self, replica: Replica, blocks: int, block_size: int, max_batched_tokens: int,
                 max_num_seqs: int, records: Records, capacity_policy: str = "preempt"):
        self.replica, self.total_blocks, self.bs = replica, blocks, block_size
        self.max_tokens, self.max_seqs, self.records = max_batched_tokens, max_num_seqs, records
        self.no_evict = capacity_policy == "no-evict"
        self.reserved = 0  # no-evict: blocks the running sequences hold or will need by their last token
        self.waiting: deque[Sequence] = deque()
        self.running: dict[int, Sequence] = {}  # admission order: the last is the newest
        self.prefilling: list[Sequence] = []
        self.dec_count = self.dec_ctx = self.S = 0  # decoders, sum of their cached tokens, decode steps so far
        self.phase = [0] * block_size  # decoders by the decode step (mod block size) that opens a block
        self.finishes: list[tuple[int, int, int, Sequence]] = []  # (decode step, rid, epoch, sequence)
        self.used = 0  # blocks owned by sequences
        self.cached: dict[int, tuple[int, int]] = {}  # group → (prefix tokens, blocks)
        self.refs: dict[int, int] = {}
        self.pinned = 0
        self.evictable: OrderedDict[int, int] = OrderedDict()  # group → blocks, least recently released first
        self.evictable_blocks = 0
        self.busy = False
        self.resume = False  # its next event plans a step without committing one (a closed loop's new request)
        self.preemptions = self.steps = 0
        self.kv_peak_blocks = 0
        self.last_decode_ms = 0.0
        self._chunks: list[tuple[Sequence, int]] = []
        self._allocated = False
        self._budget = 0
        self._step_ms = 0.0
        self.window = replica.window
        self._lines: dict[int, tuple[float, float, float, float, float]] = {}

    # --- blocks -----------------------------------------------------------------------------

    def _blocks(self, tokens: int) -> int:
        return -(-tokens // self.bs)

    def _available(self) -> int:
        return self.total_blocks - self.used - self.pinned

    def _allocate(self, count: int) -> None:
        free = self.total_blocks - self.used - self.pinned - self.evictable_blocks
        while free < count and self.evictable:
            group, blocks = self.evictable.popitem(last=False)
            self.evictable_blocks -= blocks
            del self.cached[group]
            free += blocks
        self.used += count

    def _release_prefix(self, seq: Sequence) -> None:
        if seq.hit:
            group = seq.group
            self.refs[group] -= 1
            if not self.refs[group]:
                blocks = self.cached[group][1]
                self.pinned -= blocks
                self.evictable[group] = blocks  # still resident: evicted only when blocks run out
                self.evictable_blocks += blocks

    def _hit(self, seq: Sequence) -> int:
        entry = self.cached.get(seq.group)
        if not entry or not seq.shared:
            return 0
        return min(entry[0], (seq.total - 1) // self.bs * self.bs)

    def _pin(self, seq: Sequence, hit: int) -> None:
        group = seq.group
        blocks = self.cached[group][1]
        if group in self.evictable:
            del self.evictable[group]
            self.evictable_blocks -= blocks
        if not self.refs.get(group):
            self.pinned += blocks
            self.refs[group] = 0
        self.refs[group] += 1
        seq.hit = hit

    # --- sequences --------------------------------------------------------------------------

    def enqueue(self, seq: Sequence) -> None:
        """A request routed here joins the back of the queue."""
        self.waiting.append(seq)

    @property
    def load(self) -> int:
        """Requests here, running or waiting (the least-loaded router's measure)."""
        return len(self.running) + len(self.waiting)

    def _leave_decode(self, seq: Sequence, cached_tokens: int) -> None:
        self.phase[seq.key] -= 1
        self.dec_count -= 1
        self.dec_ctx -= cached_tokens

    def _preempt(self, seq: Sequence) -> None:
        if seq.state == DECODE:
            cached = seq.ctx_join + self.S - seq.s_join
            own = self._blocks(cached + (1 if self._allocated else 0) - seq.hit)
            self._leave_decode(seq, cached)
            if self._allocated:
                self._budget += 1
            seq.generated += self.S - seq.s_join
            seq.last_token_ms = max(seq.join_ms, self.last_decode_ms)
        else:
            own = seq.own
            self.prefilling.remove(seq)
        self.used -= own
        self._release_prefix(seq)
        del self.running[seq.rid]
        self.reserved -= seq.reserved
        seq.reserved = 0
        seq.state, seq.epoch, seq.total, seq.computed, seq.hit, seq.own = (
            WAITING, seq.epoch + 1, seq.prompt + seq.generated, 0, 0, 0)
        self.waiting.appendleft(seq)
        self.preemptions += 1

    def _newest(self) -> Sequence:
        return self.running[next(reversed(self.running))]

    # --- a step -----------------------------------------------------------------------------

    def plan(self) -> float:
        """Plan the next step; return its time in ms, or 0.0 when there is nothing to run."""
        preempted = self.preemptions
        self._budget = self.max_tokens
        self._allocated = False
        self._chunks = []
        if self.dec_count:
            slot = self.S % self.bs
            need = self.phase[slot]
            if need:
                while self.total_blocks - self.used - self.pinned < need:
                    victim = self._newest()
                    if victim.state == DECODE and victim.key == slot:
                        need -= 1
                    self._preempt(victim)
                self._allocate(need)
            self._allocated = True
            self._budget -= self.dec_count
        if self.prefilling:
            self._continue_prefills()
        if self.waiting and self.preemptions == preempted:
            self._admit()
        used = self.used + self.pinned
        if used > self.kv_peak_blocks:
            self.kv_peak_blocks = used
        chunks = [(chunk, seq.computed) for seq, chunk in self._chunks if seq.state == PREFILL] if self._chunks else ()
        if not self.dec_count and not chunks:
            if self.waiting and self.preemptions != preempted:
                return self.plan()  # everything was preempted: start again from the queue
            return 0.0
        if chunks or self.window:
            self._step_ms = step_ms(self.replica, decode_batch=self.dec_count, decode_context_tokens=self.dec_ctx,
                                    prefill_chunks=chunks).step_ms
        else:
            self._step_ms = self._decode_step_ms()
        return self._step_ms

    def _decode_step_ms(self) -> float:
        """:func:`step_ms` of a decode-only step, from per-batch coefficients.

        Without sliding windows a decode step's memory and compute times are each linear in the
        summed context at a fixed batch (docs/architecture.md §12), and its communication and fixed overhead do
        not depend on it; the two lines come from ``step_ms`` itself at contexts 0 and :data:`PROBE_TOKENS`.
        """
        batch = self.dec_count
        line = self._lines.get(batch)
        if line is None:
            zero = step_ms(self.replica, decode_batch=batch, decode_context_tokens=0)
            probe = step_ms(self.replica, decode_batch=batch, decode_context_tokens=PROBE_TOKENS)
            line = self._lines[batch] = (zero.memory_ms, (probe.memory_ms - zero.memory_ms) / PROBE_TOKENS,
                                         zero.compute_ms, (probe.compute_ms - zero.compute_ms) / PROBE_TOKENS,
                                         zero.step_ms - max(zero.memory_ms, zero.compute_ms))
        memory0, memory1, compute0, compute1, fixed = line
        context = self.dec_ctx
        memory = memory0 + memory1 * context
        compute = compute0 + compute1 * context
        return (memory if memory > compute else compute) + fixed

    def _continue_prefills(self) -> None:
        for seq in list(self.prefilling):
            if self._budget <= 0:
                break
            if seq.state != PREFILL:
                continue
            chunk = min(seq.total - seq.computed, self._budget)
            need = self._blocks(seq.computed + chunk - seq.hit) - seq.own
            while self._available() < need and seq.state == PREFILL:
                self._preempt(self._newest())
            if seq.state != PREFILL:
                break
            self._allocate(need)
            seq.own += need
            self._chunks.append((seq, chunk))
            self._budget -= chunk

    def _admit(self) -> None:
        waiting, running = self.waiting, self.running
        while waiting and self._budget > 0 and len(running) < self.max_seqs:
            seq = waiting[0]
            hit = self._hit(seq)
            chunk = min(seq.total - hit, self._budget)
            need = self._blocks(chunk)
            room = self._available() - (self.cached[seq.group][1] if hit and seq.group in self.evictable else 0)
            if room < need:
                break
            if self.no_evict:  # its whole life's blocks beside every running sequence's reservation
                life = self._blocks(seq.prompt + seq.output - hit)
                pinned = self.pinned + (self.cached[seq.group][1] if hit and not self.refs.get(seq.group) else 0)
                if self.total_blocks - pinned - self.reserved < life:
                    break
                seq.reserved = life
                self.reserved += life
            waiting.popleft()
            if hit:
                self._pin(seq, hit)
            seq.computed = hit
            self._allocate(need)
            seq.own = need
            seq.state = PREFILL
            running[seq.rid] = seq
            self.prefilling.append(seq)
            self._chunks.append((seq, chunk))
            self._budget -= chunk

    def commit(self, now_ms: float) -> None:
        """Apply the planned step, which ended at ``now_ms``: every decoder's token, the prefill
        chunks, finished requests' blocks freed."""
        records = self.records
        self.steps += 1
        if self.dec_count:
            self.S += 1
            S = self.S
            self.dec_ctx += self.dec_count
            records.itl_ms.append(self._step_ms)
            records.itl_count.append(self.dec_count)
            self.last_decode_ms = now_ms
            finishes = self.finishes
            while finishes and finishes[0][0] <= S:
                _, _, epoch, seq = heapq.heappop(finishes)
                if seq.epoch != epoch or seq.state != DECODE:
                    continue
                cached = seq.ctx_join + S - seq.s_join
                self._leave_decode(seq, cached)
                self._finish(seq, now_ms, self._blocks(cached - seq.hit))
        for seq, chunk in self._chunks:
            if seq.state != PREFILL:
                continue
            seq.computed += chunk
            if seq.computed == seq.total:
                self._prefilled(seq, now_ms)
        self._chunks = []

    def _prefilled(self, seq: Sequence, now_ms: float) -> None:
        self.prefilling.remove(seq)
        seq.generated += 1
        if seq.generated == 1:
            self.records.first_ms[seq.rid] = now_ms
        else:
            self.records.itl_ms.append(now_ms - seq.last_token_ms)
            self.records.itl_count.append(1)
        if not seq.hit and seq.shared >= self.bs and seq.group not in self.cached:
            tokens = seq.shared // self.bs * self.bs
            blocks = tokens // self.bs
            self.cached[seq.group] = (tokens, blocks)
            self.refs[seq.group] = 0
            self.used -= blocks
            seq.own -= blocks
            self._pin(seq, tokens)
        if seq.generated >= seq.output:
            self._finish(seq, now_ms, seq.own)
            return
        seq.state = DECODE
        seq.ctx_join, seq.s_join, seq.join_ms = seq.total, self.S, now_ms
        seq.key = (self.S + seq.hit - seq.total) % self.bs
        self.phase[seq.key] += 1
        self.dec_count += 1
        self.dec_ctx += seq.total
        heapq.heappush(self.finishes, (self.S + seq.output - seq.generated, seq.rid, seq.epoch, seq))

    def _finish(self, seq: Sequence, now_ms: float, own: int) -> None:
        self.used -= own
        self._release_prefix(seq)
        del self.running[seq.rid]
        self.reserved -= seq.reserved
        seq.reserved = 0
        seq.state = DONE
        seq.generated = seq.output
        records = self.records
        records.finish_ms[seq.rid] = now_ms
        records.generated[seq.rid] = seq.output
        if records.finished is not None:
            records.finished.append(seq.rid)

    def generated_so_far(self, seq: Sequence) -> int:
        """Tokens ``seq`` has produced by now (decoders count the steps since they joined)."""
        return seq.generated + (self.S - seq.s_join if seq.state == DECODE else 0)

    def last_token_ms(self, seq: Sequence) -> float:
        """When ``seq``'s latest token came (ms; meaningless before its first): a decoder's at the last
        decode step since it joined, else when it joined decode or was preempted."""
        if seq.state == DECODE:
            return self.last_decode_ms if self.S > seq.s_join else seq.join_ms
        return seq.last_token_ms

    def in_flight(self):
        """The sequences still here, running or waiting."""
        return list(self.running.values()) + list(self.waiting)
