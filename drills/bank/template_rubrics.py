"""Rubrics of the problem templates: what a strong worked answer does at each stage, per drill family.

A problem template draws fresh numbers at every review (:mod:`drills.bank.problem_templates`), so its
rubric names the moves that earn the marks, never a value. Families without an entry here keep the list
of their step labels. The points follow the chapter that teaches each family (``FAMILY_CHAPTERS``).
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
}
