"""Every anchor that the header's MAP OF THIS FILE names (>>name, grep it) is found elsewhere in
the header: a newcomer who greps it lands in the code, also after a region was renamed.
Usage: python3 tests/map_anchors.py [chainqueen.h]   (prints "N passed, N failed")"""
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "chainqueen.h"
text = open(path, encoding="utf-8").read()
start = text.index("   MAP OF THIS FILE")
after = re.search(r"\n   [A-Z][A-Z ,()]+\n", text[start + 30:])   # the next section's heading
end = start + 30 + after.start()
rest = text[:start] + text[end:]
anchors = sorted(set(re.findall(r">>[A-Za-z0-9_]+", text[start:end])))
missing = [a for a in anchors if a not in rest]
for a in missing:
    print("FAIL the map names %s, which is nowhere else in %s" % (a, path))
print("map: %d anchors, each found in the code" % len(anchors) if not missing else "map: %d of %d anchors missing" % (len(missing), len(anchors)))
ok = len(anchors) > 50 and not missing   # (a map that lost its anchors fails too)
print("%d passed, %d failed" % (1 if ok else 0, 0 if ok else 1))
sys.exit(0 if ok else 1)
