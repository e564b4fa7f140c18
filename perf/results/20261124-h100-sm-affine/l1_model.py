# throwaway: per-SM LRU model of the gathered rows (1 object = K_u+V_u at D=128, 1 KB)
import sys, numpy as np
from collections import OrderedDict
f, cap_kb = sys.argv[1], int(sys.argv[2])
e = np.loadtxt(f, dtype=np.int64, comments='#')
src, dst = e[:,0], e[:,1]
n = int(max(src.max(), dst.max())) + 1
o = np.lexsort((src, dst)); src, dst = src[o], dst[o]
ptr = np.zeros(n+1, np.int64); np.add.at(ptr, dst+1, 1); ptr = np.cumsum(ptr)
SPLIT = 512
units = []
for v in np.nonzero(np.diff(ptr) > SPLIT)[0]:
    for a in range(ptr[v], ptr[v+1], SPLIT): units.append((a, min(a+SPLIT, ptr[v+1])))
for v in range(n):
    if ptr[v+1]-ptr[v] <= SPLIT: units.append((ptr[v], ptr[v+1]))
W = 8; SMS = 132; RES = 4
blocks = [units[i:i+W] for i in range(0, len(units), W)]
nb = len(blocks)
cap = cap_kb  # objects of 1 KB
def run(assign):
    hits = tot = 0
    for s in range(0, SMS, 11):
        mine = assign(s)
        c = OrderedDict()
        # RES blocks resident; warps interleaved one edge at a time
        queue = list(mine); act = []
        while queue or act:
            while len(act) < RES and queue:
                b = blocks[queue.pop(0)]; act.append([list(range(a, z)) for a, z in b])
            for blk in act:
                for w in blk:
                    if w:
                        u = src[w.pop(0)]; tot += 1
                        if u in c: hits += 1; c.move_to_end(u)
                        else:
                            c[u] = 1
                            if len(c) > cap: c.popitem(last=False)
            act = [b for b in act if any(b)]
    return hits / tot
rr = run(lambda s: list(range(s, nb, SMS)))
per = (nb + SMS - 1) // SMS
ct = run(lambda s: list(range(s*per, min(nb, (s+1)*per))))
print(f"{f} cap {cap}KB units {len(units)} blocks {nb}: round-robin hit {rr:.3f}  contiguous {ct:.3f}")
