"""Rubrics of the problem templates: what a strong worked answer does at each stage, per drill family.

A problem template draws fresh numbers at every review (:mod:`drills.bank.problem_templates`), so its
rubric names the moves that earn the marks, never a value. Every drill family has an entry
(tests/test_problem_template_rubrics.py); a family added later keeps its step labels until it gets one. The points follow the chapter that teaches each family (``FAMILY_CHAPTERS``).
"""

from __future__ import annotations

TEMPLATE_RUBRICS: dict[str, list[str]] = {
    "ladder": [
        "Starts from the memory the driver reports, in GiB, not the marketed decimal GB",
        "Multiplies by the utilisation fraction before subtracting anything",
        "Subtracts the weights at their stated precision and the activation reserve per card",
        "Computes KV bytes per token from the K/V heads (not the query heads) and bytes per value (not bits), "
        "with any K/V replication across the cards",
        "Charges each user the full context for the worst case, and the average conversation in whole blocks "
        "for the paged count",
        "Floors each user count once, from the budget, and says which count is the guarantee and which the "
        "observation",
    ],
    "kv": [
        "Keeps the factor 2 for keys and values",
        "Reads layers and K/V heads from the config, and the head dimension as hidden size ÷ query heads "
        "unless the config gives it",
        "Takes bytes per value from the cache's dtype, in bytes, not bits",
        "Multiplies by the context, capping only the windowed layers at their window",
        "Multiplies by the copies a tensor-parallel split keeps when the degree exceeds the K/V heads, or on "
        "every card for an MLA latent",
        "Reports the per-user figure in GiB (2^30 bytes)",
    ],
    "params": [
        "Counts the input embedding once and the output head separately unless the embeddings are tied",
        "Per layer, sizes the query and output projections from the hidden size and the K and V projections "
        "from the K/V heads × head dimension",
        "Counts three MLP matrices (gate, up, down) of hidden × intermediate size",
        "Adds the norm weights, per layer and final",
        "Multiplies the per-layer count by the layers and, for a mixture of experts, separates total from "
        "active parameters",
    ],
    "roofline": [
        "Takes the ridge as the dense peak at the precision the multiply runs in ÷ bandwidth, never the sparse figure",
        "Derives decode intensity as FLOPs per step over bytes per step — the batch shares one weight read",
        "Adds each sequence's cache bytes, which keep long contexts memory-bound at any batch",
        "Derives prefill intensity from the prompt tokens sharing one weight read",
        "Compares each intensity with the ridge and names the bound it implies, as a bound, not a forecast",
    ],
    "decode": [
        "Counts the bytes of a step as the weights once plus every sequence's cache at its context",
        "Uses the whole replica's bandwidth for a tensor-parallel split",
        "States the ceiling as a bound and derates it to a realistic 65–85 % of peak bandwidth",
        "Takes the step as the longer of memory and compute time plus the all-reduces",
        "Separates the rate each user sees from the replica's throughput",
        "Computes MBU from a measured rate against the bytes the step must read",
    ],
    "prefill": [
        "Computes the linear term as 2 × parameters × prompt tokens",
        "Adds the attention term, growing with the square of the prompt, and states its convention "
        "(no causal halving here)",
        "Converts FLOPs to time over the cards' dense peak × a realistic MFU",
        "Adds the queue wait to get TTFT",
        "Finds the crossover where attention equals the linear term and says how causal masking moves it",
    ],
    "moe": [
        "Sizes memory from the total parameters — every expert stays resident",
        "Sizes FLOPs per token from the active parameters (shared layers plus the routed experts)",
        "States the saving as operations, not memory",
        "Works out tokens per expert at the batch and whether most experts are read each step",
        "Judges expert parallelism from the all-to-all bytes and the experts' intensity against the ridge",
    ],
    "weights": [
        "Multiplies parameters by the effective bits per weight, not the nominal width",
        "Divides by 8 for bytes and by 2^30 for GiB, never mixing GB and GiB",
        "States which tensors a quantised file keeps at higher precision",
    ],
    "prefix": [
        "Counts the prefix's own prefill as the saving of a hit",
        "Averages by the request hit rate, not the per-hit saving",
        "Notes the hit saves prefill (TTFT), not decode bandwidth",
        "Charges the pinned blocks against the KV budget",
    ],
    "slo": [
        "Takes the smaller of the memory limit and the TPOT limit as the batch",
        "Builds the step from bytes, FLOPs and the all-reduces, not from one of them",
        "Derives the replica's rate from the batch over the step",
        "Rounds replicas and nodes up for the load and names which limit binds",
    ],
    "pareto": [
        "Traces throughput per card against the per-user rate across batch sizes",
        "Finds the batch the TPOT target allows and reads the throughput there",
        "Compares degrees at the same target, counting the weights each replica stores",
        "Names the point the product should run at and why",
    ],
    "preempt": [
        "Computes swap per token from the cache bytes over one direction of the host link",
        "Computes recompute per token from the FLOPs at a prefill MFU, attention included",
        "Gets the direction right: swap is cheaper per token",
        "Explains when recompute still wins: folded into a memory-bound decode step",
    ],
    "disagg": [
        "Sizes the transfer as prompt tokens × cache per token, one copy, in bytes",
        "Converts it to time on the stated link and relates it to the TTFT",
        "Sizes the prefill pool by FLOPs and the decode pool by the TPOT target",
        "Prices the whole fleet with occupancy and spares, not one decode node",
        "States whether disaggregation pays by the stall and transfer rule",
    ],
    "fleet": [
        "Applies Little's law: concurrency is rate × time in system",
        "Plans each replica below full occupancy",
        "Rounds replicas, GPUs and nodes up, never down",
        "Adds whole spare replicas (N+1) and names the leftover cards",
    ],
    "spec": [
        "Sums 1 + α + … + α^γ, counting the target's own token",
        "Charges the draft's cost per drafted token in the speed-up",
        "Chooses γ from acceptance and draft cost rather than maximising it",
        "Says the bound holds only while the verify step is memory-bound",
    ],
    "cost": [
        "Multiplies price per GPU-hour by every card billed",
        "Converts tokens per second to tokens per hour and applies utilisation",
        "States which tokens are billed (output or all)",
        "Prices the whole fleet, prefill and spares included, not one node",
    ],
    "formats": [
        "Derives range from the exponent bits and the bias, precision from the mantissa bits",
        "Gives E4M3's 448 (the top exponent code holds numbers), not an IEEE-style 240",
        "Keeps epsilon, unit roundoff and the smallest normal apart",
        "Sizes block formats at their effective bits, the shared scale included",
    ],
    "tp": [
        "Sizes the split for the weights and at least one user, not the weights alone",
        "Rounds to a degree the heads divide and the inference engine supports, then to whole nodes",
        "Counts K/V replication past the K/V head count",
        "Keeps the tensor-parallel group inside one NVLink domain and names the all-reduce cost",
    ],
    "rope": [
        "Counts bands as half the rotated head dimension",
        "Uses 2π for a wavelength and the exponent (d − 2)/d for the slowest band",
        "Counts unseen bands against the original training context, not the extended one",
        "Says scaling stretches wavelengths and which bands each method moves",
    ],
    "lora": [
        "Sizes each adapted matrix as rank × (input width + output width), never the full update",
        "Uses the config's narrower K/V widths under grouped-query attention",
        "Counts every adapted layer and target projection",
        "Takes adapter memory from the KV budget and says how many users it costs",
    ],
}
