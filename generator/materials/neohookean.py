"""Compressible NeoHookean elasticity ([Spielberg21] eq 13).

    psi(F) = mu/2 (tr(F^T F) - d) - mu log J + lam/2 (log J)^2
    P(F)   = mu (F - F^-T) + lam log(J) F^-T

The stress is derived by the generator from the energy (no R involved).
"""

import sympy as sp

name = "neohookean"
uses_rotation = False


def energy(m):
    return m.mu / 2 * (sum(m.F[i, j] ** 2 for i in range(m.dim) for j in range(m.dim)) - m.dim) \
        - m.mu * sp.log(m.J) + m.lam / 2 * sp.log(m.J) ** 2
