"""A small LZ77 codec for the embedded PTX (the LZ4 block format: tokens of literal run + match).

The header's decoder (cq__lz_decode in templates/cuda_backend.j2, after cq__b64_decode: the header
holds the compressed bytes in base64, generator/ptx.py rows) is 30 lines; PTX is
repetitive text, so this shrinks it about 4x.  Deterministic: the same input gives the same bytes.
"""

MIN_MATCH = 4
MAX_OFFSET = 65535
CHAIN = 48          # candidates tried per position


def _length(out, n):
    while n >= 255:
        out.append(255)
        n -= 255
    out.append(n)


def encode(data):
    data = bytes(data)
    n = len(data)
    out = bytearray()
    head = {}
    prev = [0] * n
    lit = 0            # start of the pending literal run
    i = 0
    last_match_start = n - 12      # LZ4's rule: the last 5 bytes are literals, no match starts after n-12
    while i < n:
        best_len, best_off = 0, 0
        if i < last_match_start:
            key = data[i:i + 4]
            cand = head.get(key, -1)
            tries = CHAIN
            limit = n - 5
            while cand >= 0 and i - cand <= MAX_OFFSET and tries:
                if data[cand + best_len:cand + best_len + 1] == data[i + best_len:i + best_len + 1]:
                    k = 0
                    while i + k < limit and data[cand + k] == data[i + k]:
                        k += 1
                    if k > best_len:
                        best_len, best_off = k, i - cand
                cand = prev[cand] if prev[cand] != cand else -1
                tries -= 1
        if best_len >= MIN_MATCH:
            lits = data[lit:i]
            ml = best_len - MIN_MATCH
            out.append((min(len(lits), 15) << 4) | min(ml, 15))
            if len(lits) >= 15:
                _length(out, len(lits) - 15)
            out += lits
            out += bytes((best_off & 255, best_off >> 8))
            if ml >= 15:
                _length(out, ml - 15)
            for j in range(i, min(i + best_len, last_match_start)):
                key = data[j:j + 4]
                prev[j] = head.get(key, j)
                head[key] = j
            i += best_len
            lit = i
        else:
            if i < last_match_start:
                key = data[i:i + 4]
                prev[i] = head.get(key, i)
                head[key] = i
            i += 1
    lits = data[lit:]
    out.append(min(len(lits), 15) << 4)
    if len(lits) >= 15:
        _length(out, len(lits) - 15)
    out += lits
    return bytes(out)


def _read_length(comp, i, n):
    """LZ4's extended length: n == 15 continues in the following bytes until one is not 255."""
    if n == 15:
        while True:
            b = comp[i]
            i += 1
            n += b
            if b != 255:
                break
    return n, i


def decode(comp, size):
    out = bytearray()
    i = 0
    while i < len(comp):
        t = comp[i]
        ll, i = _read_length(comp, i + 1, t >> 4)
        out += comp[i:i + ll]
        i += ll
        if i >= len(comp):
            break
        off = comp[i] | comp[i + 1] << 8
        ml, i = _read_length(comp, i + 2, t & 15)
        ml += MIN_MATCH
        start = len(out) - off
        for k in range(ml):
            out.append(out[start + k])
    if len(out) != size:
        raise ValueError("lz: decoded %d bytes, expected %d" % (len(out), size))
    return bytes(out)
