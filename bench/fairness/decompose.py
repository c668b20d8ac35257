#!/usr/bin/env python3
"""decompose.py FAIR PEND GROUPS_CSV - where the hourly Jain index goes (README.md)."""
import collections
import csv
import sys

HOUR, BACKLOG_MIN_S, GANG_MILLI = 3600, 1800, 256000


def jain(x):
    s, q = sum(x), sum(v * v for v in x)
    return 1.0 if q == 0 else s * s / (len(x) * q)


def read_hours(path):
    hours = collections.defaultdict(list)
    for line in open(path):
        h, g, ps, sh, ent = line.split()
        hours[int(h)].append((int(g), int(ps), float(sh), float(ent)))
    return hours


def pending_intervals(path):
    """group -> [(start, end, milli)] of every pending spell."""
    since, out = {}, collections.defaultdict(list)
    for line in open(path):
        t, j, g, d, m = map(int, line.split()[:5])
        if d > 0:
            since[j] = t
        else:
            out[g].append((since.pop(j), t, m))
    return out


def covered(spells, lo, hi):
    """Seconds of [lo, hi) covered by the union of spells."""
    total, end = 0, lo
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in spells if e > lo and s < hi):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def main():
    fair, pend, groups_csv = sys.argv[1:4]
    groups = [r['group'] for r in csv.DictReader(open(groups_csv))]
    spells = pending_intervals(pend)
    js, js_small, js_top = [], [], []
    n_teams = n_gang_only = 0
    tops, top_x, low = collections.Counter(), [], []
    for h, rows in sorted(read_hours(fair).items()):
        bl = sorted(((sh / ent, g) for g, ps, sh, ent in rows if ps >= BACKLOG_MIN_S and ent > 0), reverse=True)
        if len(bl) < 2:
            continue
        x = [v for v, g in bl]
        js.append(jain(x))
        small = [v for v, g in bl
                 if covered([(s, e) for s, e, m in spells[g] if m < GANG_MILLI], h, h + HOUR) >= BACKLOG_MIN_S]
        n_teams += len(bl)
        n_gang_only += len(bl) - len(small)
        if len(small) >= 2:
            js_small.append(jain(small))
        if len(x) > 2:
            js_top.append(jain(x[1:]))
        tops[groups[bl[0][1]]] += 1
        top_x.append(x[0])
        low.append(sum(1 for v in x if v < 0.5) / len(x))
    n = len(js)
    print(f'measured hours {n}, mean index {sum(js) / n:.3f}, min {min(js):.3f}, '
          f'mean backlogged teams {n_teams / n:.1f}')
    print(f'backlogged team-hours {n_teams}, backlogged only by gangs of >= {GANG_MILLI // 1000} GPUs {n_gang_only}')
    print(f'index without those teams: {sum(js_small) / max(1, len(js_small)):.3f} over {len(js_small)} hours')
    print(f'index without each hour\'s top team: {sum(js_top) / max(1, len(js_top)):.3f} over {len(js_top)} hours')
    print(f'top team most often: {tops.most_common(4)}; median top x {sorted(top_x)[n // 2]:.1f}')
    print(f'mean share of backlogged teams with x < 0.5: {sum(low) / n:.2f}')


if __name__ == '__main__':
    main()
