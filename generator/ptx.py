"""PTX for the header: compile cuda/*.cu, or reuse what a header already embeds.

Each CUDA module (one per dimension x precision) is keyed by the SHA-256 of its .cu text.  A
module whose source is unchanged is copied from the existing header (the committed one, or the
output), so `make regen` is reproducible and needs a CUDA compiler only when a kernel changed.

A changed module is compiled at compute_75 (the lowest virtual architecture CUDA 12 and 13 share)
by the PINNED compiler: NVRTC from the pip wheel in generator/requirements-cuda.txt (CUDA 12.0:
PTX ISA 8.0, so any driver for CUDA 12.0 or later, R525+, loads it).  Without that wheel, nvcc
from PATH is used (its release sets the PTX ISA and so the minimum driver), and with neither the
module is left out and the header's CUDA backend reports it as missing.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from . import lz

ARCH = "compute_75"
NVRTC_FLAGS = ["-arch=" + ARCH]
NVCC_FLAGS = ["-ptx", "-arch=" + ARCH, "-Werror", "all-warnings", "-diag-suppress", "177"]
# The compressed bytes in base64 (A-Z a-z 0-9 + /, no padding), as rows of a char array of ROW
# characters each (the header's CQ__PTX_ROW): string literals parse as one token each where a
# byte list took one a byte (~2 s of every build of the header with gcc), and take 1.4 characters
# a byte, not 3.6; rows, not one literal, because MSVC limits a literal's length.
ROW = 96

# what a module in the header looks like (templates/ptx.j2 writes it, this parses it back)
_MODULE = re.compile(
    r"/\* PTX module (?P<tag>\w+): sha256 (?P<sha>[0-9a-f]{64}), (?P<nvcc>(?:nvcc|nvrtc) [\w.]+), "
    r"PTX ISA (?P<isa>[\d.]+), (?P<size>\d+) bytes, fnv1a (?P<fnv>0x[0-9a-f]{8}), lz (?P<lz>\d+) bytes \*/\n"
    r"static const char cq__ptx_(?P=tag)_lz\[\]\[CQ__PTX_ROW \+ 1\] = \{\n(?P<body>[A-Za-z0-9+/\",\n]*?)\};", re.S)


def rows(comp):
    """the C initialiser's rows of the compressed bytes comp"""
    text = base64.b64encode(bytes(comp)).decode("ascii").rstrip("=")
    return ['"%s",' % text[i:i + ROW] for i in range(0, len(text), ROW)]


def unrows(body):
    """the bytes of an initialiser written by rows(); ValueError if it is not one"""
    parts = re.findall(r'"([A-Za-z0-9+/]*)"', body)
    if any(len(p) != ROW for p in parts[:-1]):
        raise ValueError("a row of the wrong length")
    text = "".join(parts)
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def fnv1a(data):
    h = 0x811c9dc5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xffffffff
    return h


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embedded_modules(header_path):
    """{tag: module dict} of the PTX a header embeds; {} if none or no such file."""
    if not header_path or not os.path.exists(header_path):
        return {}
    with open(header_path, encoding="utf-8") as f:
        text = f.read()
    mods = {}
    for m in _MODULE.finditer(text):
        try:
            comp = unrows(m.group("body"))
            data = lz.decode(comp, int(m.group("size")))
        except (ValueError, IndexError):
            continue   # damaged: recompile
        if len(comp) != int(m.group("lz")) or "0x%08x" % fnv1a(data) != m.group("fnv"):
            continue
        mods[m.group("tag")] = {"sha": m.group("sha"), "nvcc": m.group("nvcc"), "isa": m.group("isa"), "ptx": data,
                                "lz": comp}
    return mods


def nvcc_version(nvcc):
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True,
                             stdin=subprocess.DEVNULL, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else None


def nvrtc_library():
    """(ctypes library, 'nvrtc X.Y') of the pinned NVRTC wheel, or (None, None)."""
    try:
        import ctypes
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        return None, None
    base = os.path.join(list(pkg.__path__)[0], "lib")
    names = sorted(n for n in os.listdir(base) if n.startswith("libnvrtc.so")) if os.path.isdir(base) else []
    if not names:
        return None, None
    lib = ctypes.CDLL(os.path.join(base, names[0]))
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return lib, "nvrtc %d.%d" % (major.value, minor.value)


def compile_nvrtc(lib, source_text, tag):
    import ctypes
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), source_text.encode("utf-8"),
                               ("chainqueen_kernels_%s.cu" % tag).encode(), 0, None, None)
    if r != 0:
        raise SystemExit("nvrtcCreateProgram failed on module %s: %s" % (tag, lib.nvrtcGetErrorString(r)))
    opts = (ctypes.c_char_p * len(NVRTC_FLAGS))(*[o.encode() for o in NVRTC_FLAGS])
    r = lib.nvrtcCompileProgram(prog, len(NVRTC_FLAGS), opts)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode("utf-8", "replace")
    # warnings are errors, as with nvcc -Werror all-warnings, except #177 (unused static helper)
    warnings = [l for l in text.splitlines() if re.search(r"warning #\d+", l) and "#177" not in l]
    if r != 0 or warnings:
        raise SystemExit("NVRTC failed on module %s:\n%s" % (tag, text))
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    out = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, out)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return out.value


def _nvcc_dir(tag):
    """The folder nvcc compiles a module in: nvcc names a module's internal-linkage functions
    (_ZN.._INTERNAL_<hash>_..) by a hash of the source file's absolute path, so a random temporary
    folder made the PTX differ run to run and a header generated elsewhere differ from the
    repository's.  The folder is the same for every run (one a module, in a folder of this user's,
    mode 0700, in the temporary directory; compiles there take turns): the same code gives the
    same PTX from any working directory.  None where that folder is not safely ours (then a
    random one)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = os.path.join(tempfile.gettempdir(), "chainqueen-ptx-%d" % uid)
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        st = os.lstat(base)
        if not os.path.isdir(base) or os.path.islink(base) or (hasattr(os, "getuid") and st.st_uid != uid) \
                or st.st_mode & 0o077:
            return None
        d = os.path.join(base, tag)
        os.makedirs(d, mode=0o700, exist_ok=True)
        return d
    except OSError:
        return None


def _run_nvcc(nvcc, tag, src, out):
    try:   # never wait forever on a compiler (nor let it read our stdin)
        r = subprocess.run([nvcc] + NVCC_FLAGS + [src, "-o", out], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=900)
    except subprocess.TimeoutExpired:
        raise SystemExit("nvcc took over 900 s on module %s; install the pinned NVRTC "
                         "(pip install -r generator/requirements-cuda.txt)" % tag)
    if r.returncode != 0:
        raise SystemExit("nvcc failed on module %s:\n%s%s" % (tag, r.stdout, r.stderr))
    with open(out, "rb") as f:
        return f.read()


def compile_ptx(nvcc, source_text, tag):
    name = "chainqueen_kernels_%s.cu" % tag
    d = _nvcc_dir(tag)
    if d is None:   # (the PTX's internal names then depend on the random folder)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, name)
            with open(src, "w", encoding="utf-8") as f:
                f.write(source_text)
            return _run_nvcc(nvcc, tag, src, os.path.join(tmp, tag + ".ptx"))
    try:
        import fcntl
    except ImportError:
        fcntl = None
    with open(os.path.join(d, "lock"), "w") as lock:   # one generator at a time in the folder
        if fcntl:
            fcntl.flock(lock, fcntl.LOCK_EX)
        src, out = os.path.join(d, name), os.path.join(d, tag + ".ptx")
        try:
            with open(src, "w", encoding="utf-8") as f:
                f.write(source_text)
            return _run_nvcc(nvcc, tag, src, out)
        finally:
            for f in (src, out):
                if os.path.exists(f):
                    os.remove(f)


def modules(sources, reuse_headers, nvcc="nvcc", rebuild=False, log=print):
    """sources: [(tag, cu_text)].  Returns [module dict] in the same order, each with tag, sha,
    nvcc, isa, size, ptx (bytes) and lines (the C initialiser, NUL included), or None for a
    module that could not be built."""
    known = {}
    for h in reuse_headers:
        for tag, m in embedded_modules(h).items():
            known.setdefault((tag, m["sha"]), m)
    nvrtc, nvrtc_version = nvrtc_library()
    have_nvcc = shutil.which(nvcc) is not None
    version = nvcc_version(nvcc) if have_nvcc and not nvrtc else None
    out = []
    for tag, text in sources:
        sha = sha256(text)
        m = None if rebuild else known.get((tag, sha))
        if m is None:
            if nvrtc:
                data, compiler = compile_nvrtc(nvrtc, text, tag), nvrtc_version
            elif have_nvcc:
                data, compiler = compile_ptx(nvcc, text, tag), "nvcc " + (version or "unknown")
                log("ptx %s: WARNING: the pinned NVRTC wheel is not installed (pip install -r "
                    "generator/requirements-cuda.txt); using %s, whose PTX ISA may need a newer driver" % (tag, compiler))
            else:
                log("ptx %s: SKIP (source changed, and neither NVRTC (generator/requirements-cuda.txt) nor nvcc is "
                    "available: the header will have no PTX for it)" % tag)
                out.append(None)
                continue
            isa = re.search(rb"^\.version ([\d.]+)", data, re.M)
            m = {"sha": sha, "nvcc": compiler, "isa": isa.group(1).decode() if isa else "?", "ptx": data}
            log("ptx %s: compiled with %s (%d bytes, PTX ISA %s)" % (tag, compiler, len(data), m["isa"]))
        comp = m.get("lz") or lz.encode(m["ptx"])
        lines = rows(comp)
        lines[-1] = lines[-1].rstrip(",")
        out.append(dict(m, tag=tag, sha=sha, size=len(m["ptx"]), lz_size=len(comp), fnv="0x%08x" % fnv1a(m["ptx"]),
                        lines=lines))
    return out


def min_driver(mods):
    """(cuDriverGetVersion value, 'major.minor') a driver needs for PTX from this nvcc: the PTX ISA
    of a CUDA release is understood by that release's driver and later ones."""
    vers = [m["nvcc"].split()[-1] for m in mods if m]
    if not vers:
        return 0, "none"
    major, minor = (int(x) for x in max(vers, key=lambda v: [int(x) for x in v.split(".")]).split(".")[:2])
    return major * 1000 + minor * 10, "%d.%d" % (major, minor)
