"""Fixed corotated elasticity (Stomakhin et al. 2012; [Spielberg21] eq 12).

    psi(F) = mu |F - R|^2 + lam/2 (J - 1)^2
    P(F)   = 2 mu (F - R) + lam (J - 1) J F^-T

R is the rotation of the polar decomposition F = R S, supplied by the generator's
hand-written polar routine (m.R).  Because the energy depends on R, the stress is
stated explicitly rather than left to symbolic differentiation.
"""

name = "fixed_corotated"
uses_rotation = True


def energy(m):
    d = m.F - m.R
    return m.mu * sum(d[i, j] ** 2 for i in range(m.dim) for j in range(m.dim)) \
        + m.lam / 2 * (m.J - 1) ** 2


def stress(m):
    return 2 * m.mu * (m.F - m.R) + m.lam * (m.J - 1) * m.cofactor
