"""St. Venant-Kirchhoff elasticity: psi = mu |E|^2 + lam/2 tr(E)^2, E = (F^T F - I) / 2.

An example of a user material: no stress() is given, so the generator derives
P = dpsi/dF = F (2 mu E + lam tr(E) I) symbolically.  Build a header with it:
    python3 -m generator --material examples/materials/stvk.py -o my_chainqueen.h
which adds CQ_MATERIAL_STVK.
"""

name = "stvk"


def energy(m):
    E = (m.F.T * m.F - m.I) / 2
    trE = sum(E[i, i] for i in range(m.dim))
    return m.mu * sum(E[i, j] ** 2 for i in range(m.dim) for j in range(m.dim)) + m.lam / 2 * trE ** 2
