"""R's default random numbers in Python, for tests that rebuild data sdcMicro's tests make.

``RRunif(seed)`` is ``set.seed(seed)``; calling it ``(n, a, b)`` is one ``runif(n, a, b)``
after the other, as in R (Mersenne-Twister; R src/main/RNG.c: 50 rounds of scrambling,
625 seeds of which the first is the position; MT_genrand's 2^-32 scaling and its fixup
into (0, 1)). ``tests/test_sdcmicro_parity.py::test_r_runif_reproduces_r`` checks it
against values R prints.
"""

from __future__ import annotations

import numpy as np


class RRunif:
    """``set.seed(seed)``, then successive ``runif(n, a, b)`` calls, as R's defaults."""

    def __init__(self, seed: int):
        s = seed & 0xFFFFFFFF
        for _ in range(50):
            s = (69069 * s + 1) & 0xFFFFFFFF
        key = []
        for _ in range(625):
            s = (69069 * s + 1) & 0xFFFFFFFF
            key.append(s)
        self._mt = np.random.MT19937()
        self._mt.state = {"bit_generator": "MT19937",
                          "state": {"key": np.array(key[1:], dtype=np.uint32), "pos": 624}}

    def __call__(self, n: int, a: float = 0.0, b: float = 1.0) -> np.ndarray:
        u = self._mt.random_raw(n).astype(np.float64) * 2.3283064365386963e-10
        u[u <= 0] = 0.5 * 2.328306437080797e-10
        return a + (b - a) * u
