"""chainqueen.h generator: renders templates/ into chainqueen.h and cuda/*.cu.

Build-time only (Python 3, Jinja2, SymPy).  `python3 -m generator --help`.
"""

import os

import jinja2

from . import symbolic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "templates")
MATERIALS = os.path.join(ROOT, "generator", "materials")
BUILTIN_MATERIALS = ["fixed_corotated", "neohookean"]   # order = cq_material enum order (1, 2)
DIMS = [2, 3]
PRECISIONS = ["f32", "f64"]
VERSION = (0, 1, 0)


def kernel_name(stage, dim, precision, material=None, direction="fwd"):
    """The one place a kernel's name is made: C symbols and CUDA symbols alike.
    e.g. kernel_name("p2g", 3, "f32", "neohookean") == "cq__p2g_fwd_3d_neohookean_f32"."""
    parts = ["cq_", stage, direction, "%dd" % dim]
    if material:
        parts.append(material)
    parts.append(precision)
    return "_".join(parts)


class Precision:
    def __init__(self, name):
        self.name = name
        self.T = symbolic.c_type(name)
        f = "f" if name == "f32" else ""
        self.sqrt, self.log, self.fabs, self.floor = "sqrt" + f, "log" + f, "fabs" + f, "floor" + f
        self.eps = "1e-30f" if name == "f32" else "1e-300"
        self.lit = (lambda v: repr(float(v)) + "f") if name == "f32" else (lambda v: repr(float(v)))


def load_materials(extra_paths=()):
    paths = [os.path.join(MATERIALS, n + ".py") for n in BUILTIN_MATERIALS] + list(extra_paths)
    mods = [symbolic.load_material(p) for p in paths]
    for m, p in zip(mods, ["generator/materials/%s.py" % n for n in BUILTIN_MATERIALS] + list(extra_paths)):
        m.cq_source = p   # as the user gave it (never an absolute path of the generating machine)
    names = [m.name for m in mods]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit("duplicate material name(s): %s" % ", ".join(sorted(dup)))
    return mods


def context(extra_materials=()):
    mods = load_materials(extra_materials)
    materials = []
    for idx, mod in enumerate(mods):
        per_dim = {d: symbolic.Material(mod, d) for d in DIMS}
        materials.append({
            "name": mod.name, "index": idx + 1, "enum": "CQ_MATERIAL_" + mod.name.upper(),
            "uses_rotation": per_dim[2].uses_rotation, "doc": per_dim[2].doc, "doc_rest": per_dim[2].doc_rest,
            "source": mod.cq_source,
            "builtin": mod.name in BUILTIN_MATERIALS, "dim": per_dim,
        })
    variants = [{"dim": d, "prec": Precision(p), "mat": m}
                for d in DIMS for m in materials for p in PRECISIONS]
    return {
        "materials": materials, "dims": DIMS, "precisions": [Precision(p) for p in PRECISIONS],
        "variants": variants, "kname": kernel_name, "version": VERSION,
        "custom": bool(extra_materials),
        "gpu": False,   # True in the CUDA modules' render (__main__.cuda_sources): the GPU's grid layout
    }


def environment():
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.globals["kname"] = kernel_name
    return env


def banner(template, what="generated"):
    return ("/* ---- BEGIN GENERATED: %s from templates/%s.\n"
            "   DO NOT EDIT: change the template or generator/ and run `make regen`. ---- */") % (what, template)


def render(name, ctx):
    env = environment()
    env.globals["banner"] = banner
    return env.get_template(name).render(**ctx)


def write_if_changed(path, text):
    old = None
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)   # -o into a folder not made yet
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    if old != text:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return True
    return False
