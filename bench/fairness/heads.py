#!/usr/bin/env python3
"""heads.py HEADS PEND - how often the reservation's head changes before it starts (README.md).

HEADS (GP_HEAD_DUMP): after every pass, `tick type job milli` for each pending
job of 16 GPUs or more that holds its type's reservation (wait reason
"reserved").  A change of head whose old head has not bound since it became
head is a flap: the nodes held for the old head were let go.
"""
import collections
import sys


def main():
    heads, pend = sys.argv[1:3]
    binds = collections.defaultdict(list)
    for line in open(pend):
        t, j, g, d = map(int, line.split()[:4])
        if d < 0:
            binds[j].append(t)
    by_type = collections.defaultdict(dict)
    for line in open(heads):
        t, ty, j, m = map(int, line.split())
        by_type[ty][t] = (j, m // 1000)
    for ty, ticks in sorted(by_type.items()):
        changes = flaps = 0
        sizes, distinct, head = collections.Counter(), set(), None
        for t, (j, gpus) in sorted(ticks.items()):
            sizes[gpus] += 1
            distinct.add(j)
            if head is not None and j != head[0]:
                changes += 1
                flaps += not any(head[1] <= b <= t for b in binds[head[0]])
            if head is None or j != head[0]:
                head = (j, t)
        print(f'type {ty}: {len(ticks)} passes with a gang at the head, {len(distinct)} heads, {changes} changes, '
              f'{flaps} before the old head bound; head sizes (GPUs: passes) {dict(sorted(sizes.items()))}')


if __name__ == '__main__':
    main()
