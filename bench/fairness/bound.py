#!/usr/bin/env python3
"""bound.py FAIR PEND [--preempt] - the best hourly index any allocation could reach (README.md).

Per measured hour, with the run's backlogged teams: each team's x lies in a
box, floor = the x of its jobs already running when the hour began (0 with
--preempt), ceiling = its x plus every job it had pending in the hour
running all hour.  Capacity and block shapes are ignored (they only lower
the best), so this is an upper bound.  Over a box, Jain's maximum is at
x = clamp(L, floor, ceiling) for one level L: d/dx_g of (sum x)^2 / sum x^2
has the sign of sum x^2 / sum x - x_g.  L is scanned finely (geometric grid).
"""
import collections
import sys

HOUR, BACKLOG_MIN_S, SCAN = 3600, 1800, 4000
# Synthetic world: type_mask 1 H100, 2 A100, 3 either, 4 L40S.  A floor counts
# a mask-3 job on H100 (the smaller share), a ceiling on A100 (the larger).
CAPACITY = {'H100': 25000, 'A100': 15000, 'L40S': 10000}
FLOOR_TYPE = {1: 'H100', 2: 'A100', 3: 'H100', 4: 'L40S'}
CEILING_TYPE = {1: 'H100', 2: 'A100', 3: 'A100', 4: 'L40S'}


def jain(x):
    s, q = sum(x), sum(v * v for v in x)
    return 1.0 if q == 0 else s * s / (len(x) * q)


def best_in_box(lo, hi):
    top = max(max(lo), max(hi)) * 10 + 1e-9
    bottom = max(min((v for v in hi if v > 0), default=1e-9) / 10, 1e-12)
    best = 0.0
    for i in range(SCAN + 1):
        level = bottom * (top / bottom) ** (i / SCAN)
        best = max(best, jain([min(max(level, a), c) for a, c in zip(lo, hi)]))
    return best


def main():
    fair, pend = sys.argv[1:3]
    preempt = '--preempt' in sys.argv[3:]
    hours = collections.defaultdict(list)
    for line in open(fair):
        h, g, ps, sh, ent = line.split()
        hours[int(h)].append((int(g), int(ps), float(sh), float(ent)))
    since, spells, runs, running = {}, collections.defaultdict(list), collections.defaultdict(list), {}
    for line in open(pend):
        t, j, g, d, m, mask, dur, _ = map(int, line.split())
        if d > 0:
            since[j] = t
            if j in running:  # requeued (preempted): its run ended here
                k = running.pop(j)
                s, e, gpus, mask_k = runs[g][k]
                runs[g][k] = (s, min(e, t), gpus, mask_k)
        else:
            spells[g].append((since.pop(j), t, m / 1000, mask))
            running[j] = len(runs[g])
            runs[g].append((t, t + dur, m / 1000, mask))  # at most its duration (less after a checkpoint)
    as_run, best = [], []
    for h, rows in sorted(hours.items()):
        bl = [(g, sh, ent) for g, ps, sh, ent in rows if ps >= BACKLOG_MIN_S and ent > 0]
        if len(bl) < 2:
            continue
        as_run.append(jain([sh / ent for g, sh, ent in bl]))
        lo, hi = [], []
        for g, sh, ent in bl:
            floor = collections.Counter()
            for s, e, gpus, mask in runs[g] if not preempt else []:
                if s < h < e:
                    floor[FLOOR_TYPE[mask]] += (min(e, h + HOUR) - h) / HOUR * gpus / CAPACITY[FLOOR_TYPE[mask]]
            more = sum(gpus / CAPACITY[CEILING_TYPE[mask]] for s, e, gpus, mask in spells[g] if s < h + HOUR and e > h)
            f = max(floor.values(), default=0) / ent
            lo.append(f)
            hi.append(max(sh / ent, f) + more / ent)
        best.append(best_in_box(lo, hi))
    n = len(as_run)
    print(f'{"preemption allowed" if preempt else "no preemption"}: {n} hours, index as run {sum(as_run) / n:.3f}, '
          f'best {sum(best) / n:.3f}, hours whose best is < 0.95: {sum(1 for v in best if v < 0.95)}, '
          f'< 0.5: {sum(1 for v in best if v < 0.5)}')


if __name__ == '__main__':
    main()
