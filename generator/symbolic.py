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
import re

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


_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_TEMP = re.compile(r"^\s*const (?:float|double) (\w+) = (.*);$")


def _calls(text):
    """The function calls in C text: [(start, end, name, argument text)], outermost first."""
    out, pos = [], 0
    while True:
        m = _CALL.search(text, pos)
        if not m:
            return out
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append((m.start(), i, m.group(1), text[m.end():i - 1]))
        pos = i


def lanes_loops(code, lanes, ctype, indent="    "):
    """The loops over the lanes l < `lanes` that run the C statements `code` (stress_c,
    stress_vjp_c) for every lane, through lanes_c.  Where `code` calls a function (NeoHookean's
    log), gcc vectorizes no loop around it (the call is a library's), so the calls get loops of
    their own: first, over the lanes, each call's argument (and the temporaries it reads) into
    an array; then the calls, lane by lane; then the whole code over the lanes, each call read
    from its array.  The same operations in the same order (the argument's temporaries run twice:
    the same bits), so each lane still gets the one-particle code's bits.  A call whose argument
    holds another call, or reads a temporary that does, leaves the code in one loop, as before."""
    body = lanes_c(code, indent)
    lines = body.split("\n")
    temps = {}
    for i, line in enumerate(lines):
        m = _TEMP.match(line)
        if m:
            temps[m.group(1)] = i
    calls = []   # distinct call texts, in order of appearance
    for line in lines:
        for a, b, _, arg in _calls(line):
            if line[a:b] not in calls:
                calls.append(line[a:b])

    def one_loop():
        return "%sfor (int l = 0; l < %s; ++l) {\n%s\n%s}" % (indent, lanes, body, indent)
    if not calls:
        return one_loop()
    need = set()
    for c in calls:
        arg = _calls(c)[0][3]
        if _calls(arg):
            return one_loop()
        todo = [w for w in re.findall(r"\b\w+\b", arg) if w in temps]
        while todo:
            t = todo.pop()
            if t in need:
                continue
            need.add(t)
            rhs = _TEMP.match(lines[temps[t]]).group(2)
            if _calls(rhs):
                return one_loop()
            todo += [w for w in re.findall(r"\b\w+\b", rhs) if w in temps]
    first = [lines[i] for i in sorted(temps[t] for t in need)]
    first += ["%s    cq__fa%d[l] = %s;" % (indent, k, _calls(c)[0][3]) for k, c in enumerate(calls)]
    for k, c in enumerate(calls):
        body = body.replace(c, "cq__fv%d[l]" % k)
    out = ["%s%s %s;" % (indent, ctype, ", ".join("cq__fa%d[%s], cq__fv%d[%s]" % (k, lanes, k, lanes) for k in range(len(calls)))),
           "%sfor (int l = 0; l < %s; ++l) {   /* the calls' arguments */" % (indent, lanes)] + first + ["%s}" % indent]
    out.append("%sfor (int l = 0; l < %s; ++l) {   /* the calls, lane by lane */" % (indent, lanes))
    out += ["%s    cq__fv%d[l] = %s(cq__fa%d[l]);" % (indent, k, _calls(c)[0][2], k) for k, c in enumerate(calls)]
    out.append("%s}" % indent)
    out.append("%sfor (int l = 0; l < %s; ++l) {\n%s\n%s}" % (indent, lanes, body, indent))
    return "\n".join(out)


def lanes_c(code, indent="    "):
    """The C statements `code` (stress_c, stress_vjp_c) with the particle's arrays and scalars
    indexed by the lane l: F[k] -> F[k][l] (F, R, P, P_bar, F_bar, R_bar), mu -> mu[l], lam ->
    lam[l], *mu_bar -> gmu[l], *lam_bar -> glam[l]; temporaries stay scalars of the loop body.
    The operations and their order are untouched, so each lane gets the one-particle code's bits."""
    code = re.sub(r"\*mu_bar\b", "gmu[l]", code)
    code = re.sub(r"\*lam_bar\b", "glam[l]", code)
    code = re.sub(r"\b(F|R|P|P_bar|F_bar|R_bar)\[(\d+)\]", r"\1[\2][l]", code)
    code = re.sub(r"\b(mu|lam)\b(?!\[)", r"\1[l]", code)
    return "\n".join(indent + line for line in code.split("\n"))


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
        # the whole docstring (its energy and stress), as lines of a C comment ("*/" defused)
        rest = (mod.__doc__ or "").strip().splitlines()[1:]
        self.doc_rest = [l.rstrip().replace("*/", "* /") for l in rest]
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

    def stress_vjp(self):
        """The vector-Jacobian product of the stress as a straight-line program: with the
        incoming adjoint P_bar (symbols P_bar[k], row-major), the gradients of  sum_kl P_bar_kl P_kl
        with respect to F_ij, R_ij (R taken as independent of F: the chain through the polar
        decomposition is the caller's), mu and lam.  Reverse mode over the CSE'd forward
        stress, so the cost and the code stay linear in the size of P (differentiating the
        whole expression and CSE-ing the result is ~10x slower for 3D NeoHookean).
        Returns (statements, outputs): statements [(symbol, expr)] to evaluate in order,
        outputs [(lhs_c_string, expr)] in the order F_bar[..], R_bar[..], *mu_bar, *lam_bar, zero ones
        left out (R for a material without rotation)."""
        if getattr(self, "_vjp", None) is None:
            m, n = self.symbols, self.dim
            dP = [sp.Symbol("P_bar[%d]" % k, real=True) for k in range(n * n)]
            temps, red = sp.cse(list(self.P), symbols=sp.numbered_symbols("t"), optimizations="basic")
            # Give every function call (log, sqrt, ...) its own temporary, so the derivatives,
            # which repeat such calls, read the temporary instead of calling again.
            def is_call(c):
                return isinstance(c, sp.Function) or (isinstance(c, sp.Pow) and not c.exp.is_Integer)
            fsyms, fmap, flat = sp.numbered_symbols("f"), {}, []
            for t, e in list(temps) + [(None, e) for e in red]:
                while True:
                    calls = [c for c in sp.preorder_traversal(e) if is_call(c) and c != e
                             and not any(is_call(a) and a != c for a in sp.preorder_traversal(c))]
                    if not calls:
                        break
                    c = calls[0]
                    if c not in fmap:
                        fmap[c] = next(fsyms)
                        flat.append((fmap[c], c))
                    e = e.xreplace({c: fmap[c]})
                flat.append((t, e))
            temps = [(t, e) for t, e in flat if t is not None]
            red = [e for t, e in flat if t is None]
            inputs = list(m.F) + list(m.R) + [m.mu, m.lam]
            tsyms = [t for t, _ in temps]
            node = set(tsyms) | set(inputs)
            terms = {x: [] for x in node}

            def push(expr, bar):       # adjoint contributions of one node's local derivatives
                for x in expr.free_symbols & node:
                    d = sp.diff(expr, x)
                    if d != 0:
                        terms[x].append(bar * d)

            for k, e in enumerate(red):
                push(e, dP[k])
            bars = []
            bsyms = sp.numbered_symbols("b")
            for t, e in reversed(temps):
                if terms[t]:
                    b = next(bsyms)
                    bars.append((b, sp.Add(*terms[t])))
                    push(e, b)
            names = ["F_bar[%d]" % k for k in range(n * n)] + ["R_bar[%d]" % k for k in range(n * n)] + ["*mu_bar", "*lam_bar"]
            outputs = [(nm, sp.Add(*terms[x])) for nm, x in zip(names, inputs) if terms[x]]
            outputs = [(nm, e) for nm, e in outputs if e != 0]
            # keep only the temporaries the outputs read (an unused const is a -Wall warning)
            need = set()
            for _, e in outputs:
                need |= e.free_symbols
            kept = []
            for t, e in reversed(list(temps) + bars):
                if t in need:
                    kept.append((t, e))
                    need |= e.free_symbols
            self._vjp = (list(reversed(kept)), outputs)
        return self._vjp

    def stress_c_lanes(self, precision, lanes):
        """stress_c over lanes: the same statements, every per-particle value indexed [l], in
        loops over the lanes l < `lanes` (lanes_loops; cpu_lanes.j2 >>stress_lanes_)."""
        return lanes_loops(self.stress_c(precision), lanes, c_type(precision))

    def stress_vjp_c_lanes(self, precision, lanes):
        """stress_vjp_c over lanes, as stress_c_lanes (*mu_bar, *lam_bar: gmu[l], glam[l])."""
        return lanes_loops(self.stress_vjp_c(precision), lanes, c_type(precision))

    def stress_vjp_c(self, precision):
        """C statements ADDING the stress VJP (see stress_vjp) to F_bar, R_bar, *mu_bar, *lam_bar."""
        stmts, outputs = self.stress_vjp()
        pr = printer(precision)
        T = c_type(precision)
        lines = ["    const %s %s = %s;" % (T, pr.doprint(t), pr.doprint(e)) for t, e in stmts]
        lines += ["    %s += %s;" % (lhs, pr.doprint(e)) for lhs, e in outputs]
        return "\n".join(lines)
