"""Material files -> C code, through SymPy.

A material file (see generator/materials/) defines
    name            identifier used in kernel names
    uses_rotation   True if the energy/stress uses R, the polar rotation of F
    energy(m)       the strain-energy density psi(F) as a SymPy expression
    stress(m)       optional: the first Piola-Kirchhoff stress P(F) as a SymPy Matrix;
                    when absent it is derived as d psi / d F (valid only if psi does not
                    depend on R, which the generator checks)
where `m` carries the symbols: m.F, m.R (d x d matrices), m.J = det F,
m.cofactor = J F^-T, m.Finv_T = F^-T, m.mu, m.lam (Lame parameters), m.dim, m.I.

Everything a kernel needs from a material is computed here and printed as C:
the stress and the energy, both after common-subexpression elimination.
"""

import importlib.util
import os

import sympy as sp
from sympy.codegen.ast import float32, float64, real
from sympy.printing.c import C99CodePrinter


class MaterialSymbols:
    def __init__(self, dim):
        self.dim = dim
        n = dim
        self.F = sp.Matrix(n, n, lambda i, j: sp.Symbol("F[%d]" % (i * n + j), real=True))
        self.R = sp.Matrix(n, n, lambda i, j: sp.Symbol("R[%d]" % (i * n + j), real=True))
        self.mu = sp.Symbol("mu", positive=True)
        self.lam = sp.Symbol("lam", positive=True)
        self.J = self.F.det()
        self.cofactor = self.F.adjugate().T          # = J F^-T
        self.Finv_T = self.cofactor / self.J
        self.I = sp.eye(n)


class CPrinter(C99CodePrinter):
    """C99 printer that writes small integer powers as products (pow() is slow and, in
    float, promotes) and honours the precision through type_aliases."""

    def _print_Pow(self, expr):
        b, e = expr.as_base_exp()
        if e.is_Integer and 1 <= int(e) <= 4:
            s = "(" + self._print(b) + ")"
            return "(" + "*".join([s] * int(e)) + ")"
        if e.is_Integer and -4 <= int(e) <= -1:
            s = "(" + self._print(b) + ")"
            one = self._print(sp.Float(1.0))
            return "(%s/(%s))" % (one, "*".join([s] * -int(e)))
        return super()._print_Pow(expr)


def c_type(precision):
    return {"f32": "float", "f64": "double"}[precision]


def printer(precision):
    return CPrinter({"type_aliases": {real: float32 if precision == "f32" else float64}})


def emit(outputs, precision, indent="    "):
    """outputs: list of (lhs_c_string, sympy_expr). Returns C statements computing them
    with common subexpressions hoisted into `const T t<k>` temporaries."""
    exprs = [e for _, e in outputs]
    syms = sp.numbered_symbols("t")
    temps, reduced = sp.cse(exprs, symbols=syms, optimizations="basic")
    pr = printer(precision)
    T = c_type(precision)
    lines = ["%sconst %s %s = %s;" % (indent, T, pr.doprint(s), pr.doprint(e)) for s, e in temps]
    for (lhs, _), e in zip(outputs, reduced):
        lines.append("%s%s = %s;" % (indent, lhs, pr.doprint(e)))
    return "\n".join(lines)


def load_material(path):
    spec = importlib.util.spec_from_file_location("cq_material_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for attr in ("name", "energy"):
        if not hasattr(mod, attr):
            raise SystemExit("material file %s: missing `%s`" % (path, attr))
    if not str(mod.name).isidentifier():
        raise SystemExit("material file %s: name %r is not a C identifier" % (path, mod.name))
    return mod


class Material:
    """One material, lowered to C for one dimension."""

    def __init__(self, mod, dim):
        self.name = mod.name
        self.uses_rotation = bool(getattr(mod, "uses_rotation", False))
        self.doc = (mod.__doc__ or "").strip().splitlines()[0] if mod.__doc__ else mod.name
        m = MaterialSymbols(dim)
        self.symbols = m
        self.dim = dim
        self.energy = sp.sympify(mod.energy(m))
        if hasattr(mod, "stress"):
            P = sp.Matrix(mod.stress(m))
        else:
            if self.energy.free_symbols & set(m.R):
                raise SystemExit("material %s: energy uses R, so the file must give stress()" % mod.name)
            P = sp.Matrix(dim, dim, lambda i, j: sp.diff(self.energy, m.F[i, j]))
        if P.shape != (dim, dim):
            raise SystemExit("material %s: stress must be %dx%d" % (mod.name, dim, dim))
        self.P = P
        allowed = set(m.F) | set(m.R) | {m.mu, m.lam}
        for e in list(P) + [self.energy]:
            extra = e.free_symbols - allowed
            if extra:
                raise SystemExit("material %s: unknown symbols %s" % (mod.name, sorted(map(str, extra))))

    def stress_c(self, precision):
        n = self.dim
        return emit([("P[%d]" % (i * n + j), self.P[i, j]) for i in range(n) for j in range(n)], precision)

    def energy_c(self, precision):
        return emit([("psi", self.energy)], precision)
