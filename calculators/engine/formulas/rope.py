"""The ``rope`` family's formulas and its five steps.

Band i of a head rotating d values turns rope_theta^(−2i/d) radians per token,
so its wavelength is 2π × rope_theta^(2i/d) tokens (Su et al., 2021);
position interpolation by s multiplies every wavelength by s (Chen et al., 2023).
"""

from __future__ import annotations

from sympy import Max, Pow, floor, log, pi

from ..formula import Formula, Var
from . import product, ratio, total

BANDS = Formula(
    "bands",
    (Var("rotary_dim", "1", "values rotated per head (head_dim, or qk_rope_head_dim under MLA)"),),
    lambda s: ratio(s["rotary_dim"], 2),
)
SHORTEST_WAVELENGTH = Formula(
    "shortest_wavelength_tok", (),
    lambda s: product(2, pi),
)
LONGEST_WAVELENGTH = Formula(
    "longest_wavelength_tok",
    (Var("rope_theta", "1", "RoPE base (rope_theta)"),
     Var("rotary_dim", "1", "values rotated per head")),
    lambda s: product(2, pi, Pow(s["rope_theta"], ratio(total(s["rotary_dim"], -2), s["rotary_dim"]))),
)
BANDS_LONGER_THAN_CONTEXT = Formula(
    "bands_longer_than_context",
    (Var("bands", "1", "frequency bands per head"),
     Var("context", "tok", "original context"),
     Var("rope_theta", "1", "RoPE base (rope_theta)")),
    lambda s: Max(0, total(s["bands"], -floor(ratio(product(s["bands"], log(ratio(s["context"], product(2, pi)))),
                                                    log(s["rope_theta"]))), -1)),
    label="Bands longer than the original context",
)
SCALED_LONGEST_WAVELENGTH = Formula(
    "scaled_longest_wavelength_tok",
    (Var("scaling_factor", "1", "scaling factor s"),
     Var("longest_wavelength_tok", "tok", "longest wavelength")),
    lambda s: product(s["scaling_factor"], s["longest_wavelength_tok"]),
    label="Longest wavelength after scaling",
)
ALL_FORMULAS = (BANDS, SHORTEST_WAVELENGTH, LONGEST_WAVELENGTH, BANDS_LONGER_THAN_CONTEXT,
                SCALED_LONGEST_WAVELENGTH)
