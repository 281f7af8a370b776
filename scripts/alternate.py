#!/usr/bin/env python3
"""Run several benchmark commands alternately and compare their RESULT lines.

Usage: python3 scripts/alternate.py REPS LABEL=COMMAND [LABEL=COMMAND ...]

Each round runs every command once, in the order given (so a change of the machine's speed
touches all of them alike); each command's "RESULT <benchmark> <size> <value> ..." lines (the
format of tests/bench/*.c) are collected. The table gives, per benchmark and size, each label's
median over the rounds and its ratio to the last label's median; with RANGES=1 in the
environment, every value too, sorted; with PAIRED=1, the median (and range) of the ratios
taken within each round, which a change of the machine's speed between rounds moves less.
Open MPI's variables for running as root with more PEs than cores are set for every command
(docs/performance.md, "Commands").
"""
import collections
import os
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or any('=' not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    reps = int(sys.argv[1])
    runs = [a.split('=', 1) for a in sys.argv[2:]]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_osc='^rdma')
    values = collections.defaultdict(lambda: collections.defaultdict(list))
    by_round = collections.defaultdict(lambda: collections.defaultdict(dict))
    for rnd in range(reps):
        for label, cmd in runs:
            out = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env)
            if out.returncode != 0:
                print(f'alternate: {label}: exit {out.returncode}: {out.stderr.strip()[-300:]}',
                      file=sys.stderr)
            for line in out.stdout.splitlines():
                f = line.split()
                if len(f) >= 4 and f[0] == 'RESULT':
                    values[(f[1], int(f[2]))][label].append(float(f[3]))
                    by_round[(f[1], int(f[2]))][label][rnd] = float(f[3])
    labels = [label for label, _ in runs]
    print('benchmark size ' + ' '.join(labels) + '   ratio to ' + labels[-1])
    for key in sorted(values):
        med = [statistics.median(values[key][l]) if values[key][l] else float('nan') for l in labels]
        ratios = ' '.join('%.2f' % (m / med[-1]) if med[-1] else 'nan' for m in med[:-1])
        print(key[0], key[1], ' '.join('%.3g' % m for m in med), '  ', ratios)
        if os.environ.get('PAIRED'):
            last = by_round[key][labels[-1]]
            for l in labels[:-1]:
                r = sorted(v / last[i] for i, v in by_round[key][l].items() if last.get(i))
                if r:
                    print('    paired', l, '%.3f (%.3f-%.3f, %d rounds)' % (statistics.median(r), r[0], r[-1], len(r)))
        if os.environ.get('RANGES'):
            for l in labels:
                print('   ', l, ' '.join('%.3g' % v for v in sorted(values[key][l])))


if __name__ == '__main__':
    main()
